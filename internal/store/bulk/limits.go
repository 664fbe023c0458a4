package bulk

import (
	"fmt"

	"github.com/sluicehq/sluice/internal/provider/batchapi"
)

// size is what a batch, or one member's request, takes of the limits.
type size struct {
	requests, inputs int
	bytes, tokens    int64
}

func (s size) plus(o size) size {
	return size{s.requests + o.requests, s.inputs + o.inputs, s.bytes + o.bytes, s.tokens + o.tokens}
}

// alone checks one member's request against the limits no file can
// stretch: the *batchapi.LimitError of the first it exceeds, or nil.
func alone(m size, l batchapi.Limits) error {
	for _, c := range []struct {
		name       string
		value, max int64
	}{
		{"tokens per request", m.tokens, int64(l.MaxRequestTokens)},
		{"bytes", m.bytes, l.MaxBytes},
		{"tokens", m.tokens, int64(l.MaxTokens)},
	} {
		if c.max > 0 && c.value > c.max {
			return &batchapi.LimitError{Limit: c.name, Value: c.value, Max: c.max}
		}
	}
	return nil
}

// fits reports whether a batch of size b still fits the limits with a
// member of size m added.
func fits(b, m size, l batchapi.Limits) bool {
	n := b.plus(m)
	return n.requests <= l.MaxRequests && n.inputs <= l.MaxInputs && n.bytes <= l.MaxBytes &&
		(l.MaxTokens == 0 || n.tokens <= int64(l.MaxTokens))
}

// full reports whether no member can join a batch of size b.
func full(b size, l batchapi.Limits) bool {
	return b.requests >= l.MaxRequests || b.inputs >= l.MaxInputs
}

// measure is the size of a member's request line: one request, one input,
// its tokens, and the bytes of the line the builder will write for it.
func (c Config) measure(customID, text string) (size, error) {
	n, err := batchapi.LineSize(customID, c.Model, c.Encoding, c.Dims, []string{text})
	if err != nil {
		return size{}, fmt.Errorf("measure %s: %w", customID, err)
	}
	return size{requests: 1, inputs: 1, bytes: n, tokens: int64(c.Counter.Count(text))}, nil
}
