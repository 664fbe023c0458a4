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
	// text: text[Start:End] is the secret (for an assignment, its value).
	Start, End int
}

// Scan returns every secret in text, ordered by Start, then by End. Matches
// of different rules may overlap (a service-account file's key is also a
// private key); matches of one rule never do.
func Scan(text string) []Match {
	var out []Match
	for i := range rules {
		out = rules[i].scan(text, out)
	}
	slices.SortFunc(out, func(a, b Match) int {
		return cmp.Or(cmp.Compare(a.Start, b.Start), cmp.Compare(a.End, b.End), strings.Compare(a.Rule, b.Rule))
	})
	return out
}

// scan appends the rule's matches in text to out.
func (r *rule) scan(text string, out []Match) []Match {
	done := 0 // end of the last match: one rule's matches never overlap
	for _, at := range r.candidates(text) {
		if at < done || (r.head != nil && !r.head.MatchString(text[at:min(len(text), at+headBytes)])) {
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

// candidates returns the offsets of every occurrence of the rule's
// literals in text, ascending.
func (r *rule) candidates(text string) []int {
	var at []int
	for _, lit := range r.literals {
		for i := 0; ; {
			k := strings.Index(text[i:], lit)
			if k < 0 {
				break
			}
			at = append(at, i+k)
			i += k + 1
		}
	}
	if len(r.literals) > 1 {
		slices.Sort(at)
	}
	return at
}

func isWordByte(b byte) bool {
	return b == '_' || '0' <= b && b <= '9' || 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z'
}

// Contains reports whether text holds a secret of the named rule. It costs
// one rule's scan, for callers that screen text against rules one by one;
// an unknown name matches nothing.
func Contains(rule, text string) bool {
	for i := range rules {
		if rules[i].name == rule {
			return len(rules[i].scan(text, nil)) > 0
		}
	}
	return false
}
