package pipeline

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/sluicehq/sluice/internal/secrets"
	"github.com/sluicehq/sluice/pkg/classify"
	"github.com/sluicehq/sluice/pkg/messages"
)

// Rule is one compliance rule: text matching Pattern, or for which Match
// reports true, must not leave the process.
type Rule struct {
	Name    string
	Pattern *regexp.Regexp
	// Match, when set, is used instead of Pattern.
	Match func(text string) bool
	// Literals, when set, are substrings of which every match contains at
	// least one. The pattern runs only on text that holds one: patterns
	// starting with \b defeat the regexp engine's own prefix scan, and
	// this stage sees every chunk.
	Literals []string
}

// DefaultRules catch private-key blocks and common cloud and API
// credentials: the chunk-level patterns first, whose names escalations
// already carry, then every rule of the secrets scanner under its own name.
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
	named := map[string]bool{}
	for _, r := range rules {
		named[r.Name] = true
	}
	for _, name := range secrets.Rules() {
		if !named[name] {
			rules = append(rules, Rule{Name: name, Match: func(text string) bool { return secrets.Contains(name, text) }})
		}
	}
	return rules
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
	if r, ok := p.firstMatch(job.Text); ok {
		return classify.EscalateRule(r, fmt.Errorf("chunk matches policy rule %s", r))
	}
	if len(job.Metadata) == 0 {
		return nil
	}
	// Metadata is stored beside the vector, so it is screened like text:
	// by every rule, and by the scanner's reading of each value under its
	// key (a value under a key named like a password).
	if r, ok := p.firstMatch(string(job.Metadata)); ok {
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

// firstMatch names the first rule text breaks.
func (p *Policy) firstMatch(text string) (string, bool) {
	for _, r := range p.rules {
		if len(r.Literals) > 0 && !containsAny(text, r.Literals) {
			continue
		}
		if r.matches(text) {
			return r.Name, true
		}
	}
	return "", false
}

func (r Rule) matches(text string) bool {
	if r.Match != nil {
		return r.Match(text)
	}
	return r.Pattern.MatchString(text)
}

func containsAny(s string, subs []string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}
