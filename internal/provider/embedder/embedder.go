package embedder

import "context"

// Embedder turns texts into vectors.
//
// Implementations must be safe for concurrent use and must pass the
// conformance suite in package embeddertest.
type Embedder interface {
	// Embed returns exactly len(inputs) vectors, each of Dims() values, in
	// input order, or an error. An empty inputs slice yields an empty result
	// without calling out. Errors are classify-typed (see the package doc):
	// an *InputError names the one input at fault.
	Embed(ctx context.Context, inputs []string) ([][]float32, error)
	// Model names the model the vectors come from.
	Model() string
	// Dims is the dimension of every vector Embed returns. It is 0 only for
	// an OpenAI client configured without Dims that has not yet seen a reply.
	Dims() int
}
