package chunk

import (
	"unicode/utf8"

	"github.com/sluicehq/sluice/internal/provider/tokens"
)

// Unit is what chunk sizes are measured in.
type Unit string

const (
	// UnitChars counts Unicode code points (runes), not bytes: a chunk of
	// 1000 chars may be up to 4000 bytes of UTF-8.
	UnitChars Unit = "chars"

	// UnitTokens counts the embedding model's tokens, with Config.Tokens:
	// the model's tokenizer when it is known (tokens.ForModel), else
	// tokens.Approximate, an estimate from the characters that rarely
	// falls short of a real count for prose but can for code, emoji and
	// rare CJK characters, so size chunks with some headroom below the
	// model's context limit when counting that way.
	UnitTokens Unit = "tokens"
)

// quartersPerToken scales the estimate of UnitTokens so that the splitter
// works in integers.
const quartersPerToken = tokens.QuartersPerToken

// Count returns the length of s measured in u, estimating tokens with
// tokens.Approximate; Config.Count measures with the configured
// tokenizer. Invalid UTF-8 counts one unit per byte, as U+FFFD.
func (u Unit) Count(s string) int {
	if u != UnitTokens {
		return utf8.RuneCountInString(s)
	}
	return tokens.Approximate{}.Count(s)
}

// EstimateTokens estimates how many tokens an embedding model will count in
// s; it is UnitTokens.Count, for callers that budget requests in tokens.
func EstimateTokens(s string) int { return UnitTokens.Count(s) }
