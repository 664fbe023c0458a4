package pipeline

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/sluicehq/sluice/pkg/classify"
	"github.com/sluicehq/sluice/pkg/messages"
)

// Rule is one compliance rule: text matching Pattern must not leave the
// process.
type Rule struct {
	Name    string
	Pattern *regexp.Regexp
}

// DefaultRules catch private-key blocks and common cloud and API
// credentials.
func DefaultRules() []Rule {
	return []Rule{
		{"private_key", regexp.MustCompile(`-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----`)},
		{"aws_access_key", regexp.MustCompile(`\b(?:AKIA|ASIA)[0-9A-Z]{16}\b`)},
		{"gcp_service_account_key", regexp.MustCompile(`"private_key_id"\s*:\s*"[0-9a-f]{40}"`)},
		{"github_token", regexp.MustCompile(`\bgh[pousr]_[A-Za-z0-9]{36,}\b`)},
		{"slack_token", regexp.MustCompile(`\bxox[abposr]-[A-Za-z0-9-]{10,}\b`)},
		{"openai_api_key", regexp.MustCompile(`\bsk-(?:proj-)?[A-Za-z0-9_-]{32,}\b`)},
	}
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
	for _, r := range p.rules {
		if r.Pattern.MatchString(job.Text) {
			return classify.EscalateRule(r.Name, fmt.Errorf("chunk matches policy rule %s", r.Name))
		}
	}
	return nil
}
