package tokens

// Counter counts the tokens a model sees in a text.
type Counter interface {
	// Count returns the number of tokens in s.
	Count(s string) int
	// Encoding names the vocabulary, such as "cl100k_base", or
	// ApproximateEncoding for the estimate.
	Encoding() string
	// Exact reports whether Count is the model's own count rather than an
	// estimate.
	Exact() bool
}

// Limits of the OpenAI embedding models, the defaults wherever a limit is
// configured.
const (
	// DefaultMaxInputTokens is the context length of OpenAI's embedding
	// models: the most tokens one input may hold.
	DefaultMaxInputTokens = 8191
	// DefaultMaxRequestTokens is the most tokens OpenAI accepts in the
	// inputs of one embeddings request, all inputs together.
	DefaultMaxRequestTokens = 300_000
)

// Sum returns the tokens of all of inputs.
func Sum(c Counter, inputs []string) int {
	n := 0
	for _, in := range inputs {
		n += c.Count(in)
	}
	return n
}

// AtMost reports whether s holds at most limit tokens, counting only when
// it must: no vocabulary has a token shorter than a byte, so a text of at
// most limit bytes holds at most limit tokens.
func AtMost(c Counter, s string, limit int) bool {
	return len(s) <= limit || c.Count(s) <= limit
}
