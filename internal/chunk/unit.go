package chunk

import (
	"unicode/utf8"
)

// Unit is what chunk sizes are measured in.
type Unit string

const (
	// UnitChars counts Unicode code points (runes), not bytes: a chunk of
	// 1000 chars may be up to 4000 bytes of UTF-8.
	UnitChars Unit = "chars"

	// UnitTokens counts estimated model tokens, without a tokenizer: a quarter
	// token for each ASCII character, half a token for other characters
	// before U+2E80 (accented Latin, Greek, Cyrillic, Arabic, Indic scripts,
	// punctuation), and a whole token for each character from U+2E80 on (CJK,
	// kana, Hangul, emoji), rounded up. English BPE tokenizers average about
	// four characters a token, and non-Latin scripts cost more per character,
	// so the estimate rarely falls short of a real count; still, size chunks
	// with some headroom below the model's context limit.
	UnitTokens Unit = "tokens"
)

// quartersPerToken scales UnitTokens so that the splitter works in integers.
const quartersPerToken = 4

// Count returns the length of s measured in u. Invalid UTF-8 counts one
// unit per byte, as U+FFFD.
func (u Unit) Count(s string) int {
	if u != UnitTokens {
		return utf8.RuneCountInString(s)
	}
	q := 0
	for _, r := range s {
		q += tokenQuarters(r)
	}
	return (q + quartersPerToken - 1) / quartersPerToken
}

// EstimateTokens estimates how many tokens an embedding model will count in
// s; it is UnitTokens.Count, for callers that budget requests in tokens.
func EstimateTokens(s string) int { return UnitTokens.Count(s) }

// tokenQuarters is the estimated cost of r in quarter tokens. It never
// exceeds one token, so a chunk of any size of at least one token can take
// any rune.
func tokenQuarters(r rune) int {
	switch {
	case r < utf8.RuneSelf:
		return 1
	case r < 0x2E80:
		return 2
	default:
		return 4
	}
}
