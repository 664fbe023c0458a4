package tokens

import (
	"github.com/tiktoken-go/tokenizer"
)

// Tokenizer counts with a BPE vocabulary, as the model does.
type Tokenizer struct {
	codec tokenizer.Codec
}

var _ Counter = (*Tokenizer)(nil)

// Encodings known to NewTokenizer.
const (
	Cl100kBase = string(tokenizer.Cl100kBase)
	O200kBase  = string(tokenizer.O200kBase)
)

// NewTokenizer returns the tokenizer of a vocabulary: Cl100kBase or
// O200kBase, or another that tiktoken knows (r50k_base, p50k_base).
func NewTokenizer(encoding string) (*Tokenizer, error) {
	c, err := tokenizer.Get(tokenizer.Encoding(encoding))
	if err != nil {
		return nil, err
	}
	return &Tokenizer{codec: c}, nil
}

// Count implements Counter.
func (t *Tokenizer) Count(s string) int {
	if s == "" {
		return 0
	}
	n, err := t.codec.Count(s)
	if err != nil {
		// The codec fails only if its split pattern does, which it does not
		// on any string; the estimate is the safe answer all the same.
		return Approximate{}.Count(s)
	}
	return n
}

// Encoding implements Counter.
func (t *Tokenizer) Encoding() string { return t.codec.GetName() }

// Exact implements Counter.
func (t *Tokenizer) Exact() bool { return true }

// Ends calls fn with the byte offset in s at which each token of s ends,
// in order; the last is len(s). A token may end inside a multi-byte
// character: vocabularies hold tokens of single bytes. Invalid UTF-8 is
// tokenized as U+FFFD, which is longer than the byte it replaces, so
// offsets past one are clamped to len(s).
func (t *Tokenizer) Ends(s string, fn func(end int)) {
	if s == "" {
		return
	}
	_, toks, err := t.codec.Encode(s)
	if err != nil {
		fn(len(s))
		return
	}
	end := 0
	for _, tok := range toks {
		end += len(tok)
		fn(min(end, len(s)))
	}
}
