package chunk

import (
	"errors"
	"fmt"
	"math"

	"github.com/sluicehq/sluice/internal/provider/tokens"
)

// Defaults of DefaultConfig: 512 estimated tokens fits the smallest common
// embedding context (BERT-family models) and leaves the large ones plenty
// of room per request; an eighth of overlap keeps a sentence cut at a chunk
// edge readable in one of the two chunks.
const (
	DefaultSize    = 512
	DefaultOverlap = 64
	DefaultUnit    = UnitTokens
)

// Config says how to split text.
type Config struct {
	// Size is the largest chunk, in Unit. Defaults to DefaultSize (512) in
	// DefaultConfig.
	Size int

	// Overlap is how much of the end of a chunk the next chunk repeats, in
	// Unit, so that a passage cut in two is still whole in one of them. The
	// repeat starts at a word boundary when there is one, so it is often a
	// little shorter. Zero means none. Must be smaller than Size. Defaults
	// to DefaultOverlap (64) in DefaultConfig.
	Overlap int

	// Unit is what Size and Overlap count. Defaults to UnitTokens in
	// DefaultConfig.
	Unit Unit

	// Tokens counts UnitTokens: a *tokens.Tokenizer counts as the model
	// does (see tokens.ForModel), so that no chunk is over Size by the
	// model's own count. Defaults to nil, tokens.Approximate.
	Tokens tokens.Counter
}

// MinExactSize is the smallest Size a tokenizer can honour: a character
// is up to four bytes of UTF-8, and a vocabulary may spend a token on
// each.
const MinExactSize = 4

// Count returns the length of s as c measures it: in c.Unit, tokens
// counted by c.Tokens.
func (c Config) Count(s string) int {
	if t, ok := c.Tokens.(*tokens.Tokenizer); ok && c.Unit == UnitTokens {
		return t.Count(s)
	}
	return c.Unit.Count(s)
}

// DefaultConfig returns the configuration to start from: 512 estimated
// tokens per chunk with 64 of overlap.
func DefaultConfig() Config {
	return Config{Size: DefaultSize, Overlap: DefaultOverlap, Unit: DefaultUnit}
}

// Validate reports a configuration Split cannot use, saying how to fix it.
// The zero Config is not valid: start from DefaultConfig.
func (c Config) Validate() error {
	var errs []error
	switch c.Unit {
	case UnitChars, UnitTokens:
	default:
		errs = append(errs, fmt.Errorf("unit %q: use %q or %q", c.Unit, UnitTokens, UnitChars))
	}
	switch c.Tokens.(type) {
	case nil, tokens.Approximate, *tokens.Tokenizer:
	default:
		errs = append(errs, fmt.Errorf("tokens: %T is not a counter the splitter knows: use tokens.ForModel", c.Tokens))
	}
	_, exact := c.Tokens.(*tokens.Tokenizer)
	switch {
	case exact && c.Unit == UnitTokens && c.Size > 0 && c.Size < MinExactSize:
		errs = append(errs, fmt.Errorf("size %d: must be at least %d tokens, the most one character can cost", c.Size, MinExactSize))
	case c.Size <= 0:
		errs = append(errs, fmt.Errorf("size %d: must be at least 1; the default is %d %s", c.Size, DefaultSize, DefaultUnit))
	case c.Size > math.MaxInt32/quartersPerToken:
		errs = append(errs, fmt.Errorf("size %d: must be at most %d", c.Size, math.MaxInt32/quartersPerToken))
	}
	switch {
	case c.Overlap < 0:
		errs = append(errs, fmt.Errorf("overlap %d: must be 0 (none) or more", c.Overlap))
	case c.Size > 0 && c.Overlap >= c.Size:
		errs = append(errs, fmt.Errorf("overlap %d: must be smaller than size %d; an eighth of the size (%d) is usual", c.Overlap, c.Size, c.Size/8))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("chunk config: %w", err)
	}
	return nil
}
