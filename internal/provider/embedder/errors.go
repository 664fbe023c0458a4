package embedder

import (
	"errors"
	"fmt"

	"github.com/sluicehq/sluice/pkg/classify"
)

// ErrMalformedResponse is matched (errors.Is) by errors about a 2xx reply
// that could not be used: bad JSON, too few or too many vectors, missing or
// duplicate indexes. Such errors are classified retryable (a provider blip):
// they are wrapped in classify.Retryable(classify.ClassServerError, …).
var ErrMalformedResponse = errors.New("malformed embeddings response")

// InputError blames one input of a batch: the provider answered, but that
// input's vector is unusable, or the provider rejected the request naming
// that input. Err is a permanent error: a classify error
// (classify.ClassDimensionMismatch, classify.ClassInvalidVector or
// classify.ClassEmptyText) or the 400 reply's *classify.StatusError. The
// caller parks input Index and re-submits the others. When several inputs
// are at fault, Index is the lowest, so the inputs before it are not.
type InputError struct {
	// Index is the position of the input in the slice given to Embed.
	Index int
	// Err is the permanent classify error saying what is wrong.
	Err error
}

// Error implements error.
func (e *InputError) Error() string { return fmt.Sprintf("input %d: %v", e.Index, e.Err) }

// Unwrap returns the classify error.
func (e *InputError) Unwrap() error { return e.Err }

var errEmptyInput = errors.New("input is empty")

func dimensionMismatch(got, want int) error {
	return classify.Permanent(classify.ClassDimensionMismatch, fmt.Errorf("vector has %d dimensions, want %d", got, want))
}

func invalidVector() error {
	return classify.Permanent(classify.ClassInvalidVector, errors.New("vector holds NaN or infinity"))
}
