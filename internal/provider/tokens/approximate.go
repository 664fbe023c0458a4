package tokens

import "unicode/utf8"

// ApproximateEncoding is the Encoding of Approximate.
const ApproximateEncoding = "approximate"

// Approximate estimates tokens without a vocabulary: a quarter token for
// each ASCII character, half a token for other characters before U+2E80
// (accented Latin, Greek, Cyrillic, Arabic, Indic scripts, punctuation),
// and a whole token for each character from U+2E80 on (CJK, kana,
// Hangul, emoji), rounded up. English BPE vocabularies average about four
// characters a token; code, emoji and rare CJK characters cost more than
// the estimate, so leave headroom below a model's limits when counting
// this way.
type Approximate struct{}

var _ Counter = Approximate{}

// Count implements Counter. Invalid UTF-8 counts as U+FFFD, one rune per
// byte.
func (Approximate) Count(s string) int {
	q := 0
	for _, r := range s {
		q += Quarters(r)
	}
	return (q + QuartersPerToken - 1) / QuartersPerToken
}

// Encoding implements Counter.
func (Approximate) Encoding() string { return ApproximateEncoding }

// Exact implements Counter: the estimate is not the model's count.
func (Approximate) Exact() bool { return false }

// QuartersPerToken is the scale of Quarters.
const QuartersPerToken = 4

// Quarters is Approximate's cost of r, in quarter tokens. It never exceeds
// one token.
func Quarters(r rune) int {
	switch {
	case r < utf8.RuneSelf:
		return 1
	case r < 0x2E80:
		return 2
	default:
		return 4
	}
}
