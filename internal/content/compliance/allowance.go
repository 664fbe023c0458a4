package compliance

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluicehq/sluice/internal/content/secrets"
)

// Allowance lets a source's chunks hold what some rules find: the
// operator's call on a false positive, such as documentation that shows
// example passwords. A chunk an allowed rule alone matches is embedded,
// and counted in Allowed; a rule not allowed still escalates the same
// chunk, and the same text in another source is still escalated.
type Allowance struct {
	// BySource is the rule names each source is allowed, from the policy
	// file's secrets_allow.
	BySource map[string][]string
	// Allowed, when set, counts the allowed findings by source and rule
	// (labels "source" and "rule"): the record of what the allowance let
	// through.
	Allowed *prometheus.CounterVec
}

// NewAllowedCounter registers the counter of allowed findings,
// sluice_compliance_allowed_total{source,rule}, on reg.
func NewAllowedCounter(reg prometheus.Registerer) *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sluice_compliance_allowed_total",
		Help: "Compliance findings in chunks that were embedded because the source's policy allows the rule (secrets_allow), by source and rule.",
	}, []string{"source", "rule"})
	reg.MustRegister(c)
	return c
}

// WithAllowance returns a copy of p that lets each source's chunks hold
// what a's rules find. A name that is no rule of p's, nor of the
// secrets scanner's, is an error listing the names there are.
func (p *Checker) WithAllowance(a Allowance) (*Checker, error) {
	known := p.ruleNames()
	for source, rules := range a.BySource {
		for _, r := range rules {
			if !slices.Contains(known, r) {
				return nil, fmt.Errorf("policy: source %q: secrets_allow %q is not a compliance rule: use one of %s", source, r, strings.Join(known, ", "))
			}
		}
	}
	c := *p
	c.allowance = Allowance{BySource: maps.Clone(a.BySource), Allowed: a.Allowed}
	return &c, nil
}

// ruleNames lists every rule name a finding of p can carry, sorted.
func (p *Checker) ruleNames() []string {
	var names []string
	for _, r := range p.rules {
		if r.Scanner {
			names = append(names, secrets.RuleNames()...)
			continue
		}
		names = append(names, r.Name)
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// allows reports whether source may hold what rule finds, and counts it
// when it may.
func (a Allowance) allows(source, rule string) bool {
	if !slices.Contains(a.BySource[source], rule) {
		return false
	}
	if a.Allowed != nil {
		a.Allowed.WithLabelValues(source, rule).Inc()
	}
	return true
}
