package compliance

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/sluicehq/sluice/internal/secrets"
	"github.com/sluicehq/sluice/pkg/classify"
	"github.com/sluicehq/sluice/pkg/messages"
)

// Rule is one compliance rule: text matching Pattern, or in which Find
// finds something, must not leave the process.
type Rule struct {
	Name    string
	Pattern *regexp.Regexp
	// Find, when set, is used instead of Pattern: it reports whether text
	// breaks the rule and names what it found, so that one rule can stand
	// for a family (the secrets scanner's).
	Find func(text string) (string, bool)
	// Literals, when set, are substrings of which every match contains at
	// least one. The pattern runs only on text that holds one: patterns
	// starting with \b defeat the regexp engine's own prefix scan, and
	// this stage sees every chunk.
	Literals []string
}

// DefaultRules catch private-key blocks and common cloud and API
// credentials: the chunk-level patterns first, whose names escalations
// already carry, then the secrets scanner, each finding under its own
// rule's name.
//
// A chunk is screened alone here, so a private key longer than a chunk is
// caught only in the chunk holding its BEGIN line; screening whole
// documents with secrets.Scan before chunking is what catches the rest.
func DefaultRules() []Rule {
	rules := []Rule{
		{"private_key", regexp.MustCompile(`-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----`), nil, []string{"PRIVATE KEY"}},
		{"aws_access_key", regexp.MustCompile(`\b(?:AKIA|ASIA)[0-9A-Z]{16}\b`), nil, []string{"AKIA", "ASIA"}},
		{"gcp_service_account_key", regexp.MustCompile(`"private_key_id"\s*:\s*"[0-9a-f]{40}"`), nil, []string{`"private_key_id"`}},
		{"github_token", regexp.MustCompile(`\bgh[pousr]_[A-Za-z0-9]{36,}\b`), nil, []string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_"}},
		{"slack_token", regexp.MustCompile(`\bxox[abposr]-[A-Za-z0-9-]{10,}\b`), nil, []string{"xox"}},
		{"openai_api_key", regexp.MustCompile(`\bsk-(?:proj-)?[A-Za-z0-9_-]{32,}\b`), nil, []string{"sk-"}},
	}
	// One scan stands for every rule of the scanner: it finds all their
	// literals in one pass and decodes base64 once, where a rule at a
	// time would repeat both for each.
	return append(rules, Rule{Name: "secrets", Find: firstSecret})
}

// firstSecret names the rule of the first secret the scanner finds in
// text.
func firstSecret(text string) (string, bool) {
	if m := secrets.Scan(text); len(m) > 0 {
		return m[0].Rule, true
	}
	return "", false
}

// Policy is the compliance stage run before any text is sent to the
// embedder.
type Policy struct {
	rules   []Rule
	allowed map[string]bool
}

// NewPolicy builds a policy from rules and a source allow-list; an empty
// allow-list admits every source.
func NewPolicy(rules []Rule, allowedSources []string) *Policy {
	p := &Policy{rules: rules}
	for _, s := range allowedSources {
		if s = strings.TrimSpace(s); s != "" {
			if p.allowed == nil {
				p.allowed = map[string]bool{}
			}
			p.allowed[s] = true
		}
	}
	return p
}

// ParseRules reads extra rules written as name=regexp.
func ParseRules(specs []string) ([]Rule, error) {
	var rules []Rule
	for _, spec := range specs {
		name, expr, ok := strings.Cut(spec, "=")
		if !ok || name == "" || expr == "" {
			return nil, fmt.Errorf("policy rule %q: write it as name=regexp", spec)
		}
		re, err := regexp.Compile(expr)
		if err != nil {
			return nil, fmt.Errorf("policy rule %q: %w", name, err)
		}
		rules = append(rules, Rule{Name: name, Pattern: re})
	}
	return rules, nil
}

// Check returns an escalate error naming the first rule the job breaks, or
// nil. The error never quotes the matched text.
func (p *Policy) Check(job *messages.ChunkJob) error {
	if p == nil {
		return nil
	}
	if p.allowed != nil && !p.allowed[job.SourceID] {
		return classify.EscalateRule("source_not_allowed", fmt.Errorf("source %q is not on the allow-list", job.SourceID))
	}
	if r, ok := p.firstMatch(job.Text, true); ok {
		return classify.EscalateRule(r, fmt.Errorf("chunk matches policy rule %s", r))
	}
	if len(job.Metadata) == 0 {
		return nil
	}
	// Metadata is stored beside the vector, so it is screened like text:
	// by every pattern, and by the scanner's reading of each value under
	// its key (a value under a key named like a password), which stands
	// for its scan of the raw JSON.
	if r, ok := p.firstMatch(string(job.Metadata), false); ok {
		return classify.EscalateRule(r, fmt.Errorf("chunk metadata matches policy rule %s", r))
	}
	findings, err := secrets.ScanMetadataJSON(job.Metadata)
	if err != nil {
		return classify.Permanent(classify.ClassInvalidMessage, err)
	}
	if len(findings) > 0 {
		f := findings[0]
		return classify.EscalateRule(f.Rule, fmt.Errorf("chunk metadata at %s matches policy rule %s", f.Path, f.Rule))
	}
	return nil
}

// firstMatch names the first rule text breaks; without finders, only
// the pattern rules are tried.
func (p *Policy) firstMatch(text string, finders bool) (string, bool) {
	for _, r := range p.rules {
		if (r.Find != nil && !finders) || (len(r.Literals) > 0 && !containsAny(text, r.Literals)) {
			continue
		}
		if name, ok := r.matches(text); ok {
			return name, true
		}
	}
	return "", false
}

// matches names the rule text breaks, if it breaks r.
func (r Rule) matches(text string) (string, bool) {
	if r.Find != nil {
		return r.Find(text)
	}
	return r.Name, r.Pattern.MatchString(text)
}

func containsAny(s string, subs []string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}
