package secrets

// Span is a byte range [Start, End) of a text, such as a chunk's.
type Span struct {
	Start, End int
}

// Touched returns the indexes in spans, ascending and without repeats, of
// every span that overlaps at least one match by at least one byte. Spans
// may overlap one another and need not be sorted, so overlapping chunks
// are each reported.
func Touched(matches []Match, spans []Span) []int {
	var out []int
	for i, s := range spans {
		if _, ok := s.firstMatch(matches); ok {
			out = append(out, i)
		}
	}
	return out
}

// firstMatch returns the first of matches that overlaps s.
func (s Span) firstMatch(matches []Match) (Match, bool) {
	for _, m := range matches {
		if m.Start < s.End && s.Start < m.End {
			return m, true
		}
	}
	return Match{}, false
}
