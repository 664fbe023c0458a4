package secrets

// Prefilter finds the scanner's literals and a caller's own groups of
// literals in one pass over a text, so that a caller with rules of its
// own (the compliance stage's patterns) reads a chunk once for both.
type Prefilter struct {
	a      *automaton
	groups int
}

// NewPrefilter builds a prefilter for groups of literals, matched as
// written (case-sensitively). Every literal must be at least 2 bytes
// long.
func NewPrefilter(groups [][]string) *Prefilter {
	lits := ruleLiterals()
	for g, group := range groups {
		for _, lit := range group {
			lits = append(lits, autoLiteral{text: lit, owner: len(rules) + g})
		}
	}
	return &Prefilter{a: newAutomaton(lits), groups: len(groups)}
}

// Hits is what one pass of a Prefilter found in a text.
type Hits struct {
	text  string
	cands [][]int
	held  []bool
}

// Find reads text once for every literal of p.
func (p *Prefilter) Find(text string) Hits {
	cands, held := candidates(p.a, text, len(rules), len(rules)+p.groups)
	return Hits{text: text, cands: cands, held: held}
}

// Holds reports whether the text holds a literal of group g.
func (h Hits) Holds(g int) bool { return h.held[g] }

// Scan returns Scan(text) for the text h was found in, without reading
// it for literals again.
func (h Hits) Scan() []Match { return scanCandidates(h.text, h.cands, 0) }
