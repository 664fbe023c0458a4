package chunk

import (
	"errors"
	"fmt"
	"math"
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
	switch {
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
