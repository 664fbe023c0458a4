package compliance

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/sluicehq/sluice/internal/content/secrets"
	"github.com/sluicehq/sluice/pkg/classify"
	"github.com/sluicehq/sluice/pkg/messages"
)

// Rule is one compliance rule: text matching Pattern, or in which the
// secrets scanner finds something when Scanner is set, must not leave the
// process.
type Rule struct {
	Name    string
	Pattern *regexp.Regexp
	// Scanner, when set, makes the rule stand for the secrets scanner's
	// whole family instead of Pattern: a secret it finds breaks the rule
	// under the secret's own rule name.
	Scanner bool
	// Literals, when set, are substrings of which every match contains at
	// least one, each at least 2 bytes long. The pattern runs only on text
	// that holds one: patterns starting with \b defeat the regexp engine's
	// own prefix scan, and this stage sees every chunk.
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
		{"private_key", regexp.MustCompile(`-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----`), false, []string{"PRIVATE KEY"}},
		{"aws_access_key", regexp.MustCompile(`\b(?:AKIA|ASIA)[0-9A-Z]{16}\b`), false, []string{"AKIA", "ASIA"}},
		{"gcp_service_account_key", regexp.MustCompile(`"private_key_id"\s*:\s*"[0-9a-f]{40}"`), false, []string{`"private_key_id"`}},
		{"github_token", regexp.MustCompile(`\bgh[pousr]_[A-Za-z0-9]{36,}\b`), false, []string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_"}},
		{"slack_token", regexp.MustCompile(`\bxox[abposr]-[A-Za-z0-9-]{10,}\b`), false, []string{"xox"}},
		{"openai_api_key", regexp.MustCompile(`\bsk-(?:proj-)?[A-Za-z0-9_-]{32,}\b`), false, []string{"sk-"}},
	}
	// One scan stands for every rule of the scanner: it decodes base64
	// once, where a rule at a time would repeat it for each.
	return append(rules, Rule{Name: "secrets", Scanner: true})
}

// Checker is the compliance stage run before any text is sent to the
// embedder.
type Checker struct {
	rules []Rule
	// group is each rule's group of literals in prefilter, or -1 for a
	// rule without literals.
	group []int
	// prefilter finds every rule's literals and the scanner's in one pass
	// over a chunk: the stage sees every chunk, and a search per literal
	// read each chunk some thirty times.
	prefilter *secrets.Prefilter
	allowed   map[string]bool
	// allowance is the rules each source's chunks may match; see
	// WithAllowance.
	allowance Allowance
}

// NewChecker builds the compliance check from rules and a source allow-list; an empty
// allow-list admits every source.
func NewChecker(rules []Rule, allowedSources []string) *Checker {
	p := &Checker{rules: rules, group: make([]int, len(rules))}
	var groups [][]string
	for i, r := range rules {
		p.group[i] = -1
		if len(r.Literals) > 0 && !r.Scanner {
			p.group[i] = len(groups)
			groups = append(groups, r.Literals)
		}
	}
	p.prefilter = secrets.NewPrefilter(groups)
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
func (p *Checker) Check(job *messages.ChunkJob) error {
	if p == nil {
		return nil
	}
	if p.allowed != nil && !p.allowed[job.SourceID] {
		return classify.EscalateRule("source_not_allowed", fmt.Errorf("source %q is not on the allow-list", job.SourceID))
	}
	if r, ok := p.firstMatch(job.SourceID, job.Text, true); ok {
		return classify.EscalateRule(r, fmt.Errorf("chunk matches policy rule %s", r))
	}
	if len(job.Metadata) == 0 {
		return nil
	}
	// Metadata is stored beside the vector, so it is screened like text:
	// by every pattern, and by the scanner's reading of each value under
	// its key (a value under a key named like a password), which stands
	// for its scan of the raw JSON.
	if r, ok := p.firstMatch(job.SourceID, string(job.Metadata), false); ok {
		return classify.EscalateRule(r, fmt.Errorf("chunk metadata matches policy rule %s", r))
	}
	findings, err := secrets.ScanMetadataJSON(job.Metadata)
	if err != nil {
		return classify.Permanent(classify.ClassInvalidMessage, err)
	}
	for _, f := range findings {
		if !p.allowance.allows(job.SourceID, f.Rule) {
			return classify.EscalateRule(f.Rule, fmt.Errorf("chunk metadata at %s matches policy rule %s", f.Path, f.Rule))
		}
	}
	return nil
}

// firstMatch names the first rule text breaks that source is not
// allowed to hold; without the scanner, only the pattern rules are
// tried.
func (p *Checker) firstMatch(source, text string, scanner bool) (string, bool) {
	hits := p.prefilter.Find(text)
	for i, r := range p.rules {
		switch {
		case r.Scanner:
			if !scanner {
				continue
			}
			for _, m := range hits.Scan() {
				if !p.allowance.allows(source, m.Rule) {
					return m.Rule, true
				}
			}
		case p.group[i] >= 0 && !hits.Holds(p.group[i]):
			continue
		case r.Pattern.MatchString(text) && !p.allowance.allows(source, r.Name):
			return r.Name, true
		}
	}
	return "", false
}
