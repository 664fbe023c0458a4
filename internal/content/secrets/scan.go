package secrets

import (
	"cmp"
	"slices"
	"strings"
)

// Match is one secret found in a text.
type Match struct {
	// Rule names the kind of secret, one of the Rule* constants.
	Rule string
	// Start and End are the byte offsets of the secret in the scanned
	// text: text[Start:End] is the secret (for an assignment, its value;
	// for a secret found in decoded base64, the whole base64 run).
	Start, End int
}

// Scan returns every secret in text, ordered by Start, then by End. Matches
// of different rules may overlap (a service-account file's key is also a
// private key); matches of one rule never do.
func Scan(text string) []Match {
	return scan(text, 0)
}

func scan(text string, depth int) []Match {
	cands, _ := candidates(literals, text, len(rules), len(rules))
	return scanCandidates(text, cands, depth)
}

// scanCandidates is scan once the literals are found.
func scanCandidates(text string, cands [][]int, depth int) []Match {
	var out []Match
	for i := range rules {
		out = rules[i].scanAt(text, cands[i], out)
	}
	sortMatches(out)
	if depth < maxDecodeDepth {
		out = scanEncoded(text, depth, out)
	}
	return mergeMatches(out)
}

// scanEncoded appends, for every base64 run of text outside the private
// keys found so far (sorted), one match over the whole run per rule that
// finds a secret in the decoded text, and sorts the result. A key's body
// is base64 of binary, not worth decoding.
func scanEncoded(text string, depth int, found []Match) []Match {
	out, k, covered := found, 0, 0
	for _, run := range encodedRuns(text) {
		for k < len(found) && found[k].Start <= run.start {
			if found[k].Rule == RulePrivateKey {
				covered = max(covered, found[k].End)
			}
			k++
		}
		if run.end <= covered {
			continue
		}
		decoded, ok := decodeRun(text[run.start:run.end])
		if !ok {
			continue
		}
		var rulesFound []string
		for _, m := range scan(decoded, depth+1) {
			if !slices.Contains(rulesFound, m.Rule) {
				rulesFound = append(rulesFound, m.Rule)
				out = append(out, Match{Rule: m.Rule, Start: run.start, End: run.end})
			}
		}
	}
	if len(out) > len(found) {
		sortMatches(out)
	}
	return out
}

func sortMatches(ms []Match) {
	slices.SortFunc(ms, func(a, b Match) int {
		return cmp.Or(cmp.Compare(a.Start, b.Start), cmp.Compare(a.End, b.End), strings.Compare(a.Rule, b.Rule))
	})
}

// mergeMatches joins overlapping matches of one rule, which several
// formats of one kind of secret (or a secret found both as is and
// decoded) can produce, keeping sorted matches sorted.
func mergeMatches(ms []Match) []Match {
	if len(ms) < 2 {
		return ms
	}
	last := map[string]int{} // rule → index in out of its last match
	out := ms[:0]
	for _, m := range ms {
		if i, ok := last[m.Rule]; ok && m.Start < out[i].End {
			out[i].End = max(out[i].End, m.End)
			continue
		}
		last[m.Rule] = len(out)
		out = append(out, m)
	}
	sortMatches(out)
	return out
}

// scanAt appends the rule's matches in text to out, trying the pattern
// at the offsets of its literals, ascending.
func (r *rule) scanAt(text string, candidates []int, out []Match) []Match {
	if r.find != nil {
		return r.find(r.name, text, out)
	}
	done := 0 // end of the last match: one rule's matches never overlap
	for _, at := range candidates {
		if at < done || (r.pre != nil && !r.pre(text, at)) ||
			(r.head != nil && !r.head.MatchString(text[at:min(len(text), at+headBytes)])) {
			continue
		}
		from := max(at-r.back, done)
		window := text[from:min(len(text), at+r.reach)]
		loc := r.re.FindStringSubmatchIndex(window)
		if loc == nil || from+loc[0] > at || from+loc[1] <= at {
			continue // no match, or one that does not hold this literal
		}
		for k := range loc {
			if loc[k] >= 0 {
				loc[k] += from
			}
		}
		if r.wordStart && loc[0] > 0 && isWordByte(text[loc[0]-1]) {
			continue
		}
		start, end, ok := loc[0], loc[1], true
		if r.span != nil {
			start, end, ok = r.span(text, loc)
		}
		if !ok || start >= end {
			continue
		}
		out = append(out, Match{Rule: r.name, Start: start, End: end})
		done = max(done, end, loc[1])
	}
	return out
}

// literals finds the literals of every rule in one pass over a text.
var literals = newAutomaton(ruleLiterals())

// candidates returns, for each of the first n owners of a's literals, the
// ascending offsets at which one of its literals starts in text, and
// whether each later owner (n onwards, up to owners) holds one.
func candidates(a *automaton, text string, n, owners int) ([][]int, []bool) {
	cands := make([][]int, n)
	var held []bool
	if owners > n {
		held = make([]bool, owners-n)
	}
	unsorted := false
	a.each(text, func(owner, at int) {
		if owner >= n {
			held[owner-n] = true
			return
		}
		c := cands[owner]
		switch {
		case len(c) == 0 || c[len(c)-1] < at:
			cands[owner] = append(c, at)
		case c[len(c)-1] > at:
			// A longer literal of the same rule ending later can start
			// earlier.
			cands[owner], unsorted = append(c, at), true
		}
	})
	if unsorted {
		for i := range cands {
			slices.Sort(cands[i])
			cands[i] = slices.Compact(cands[i])
		}
	}
	return cands, held
}

func isWordByte(b byte) bool {
	return b == '_' || '0' <= b && b <= '9' || 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z'
}
