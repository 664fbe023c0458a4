package embeddertest

import (
	"context"
	"errors"
	"math"
	"testing"

	"github.com/sluicehq/sluice/internal/provider/embedder"
)

// Dims is the dimension Run asks its constructor for.
const Dims = 64

// Run checks the Embedder contract against implementations built by
// newEmbedder, which must return an Embedder producing dims-dimensional
// vectors. Each subtest builds its own Embedder and runs in parallel.
//
// The suite needs vectors that are deterministic for a given text and that
// carry lexical similarity, which real models and embedsim both provide.
func Run(t *testing.T, newEmbedder func(t *testing.T, dims int) embedder.Embedder) {
	t.Helper()
	for _, tc := range []struct {
		name string
		fn   func(*testing.T, embedder.Embedder)
	}{
		{"OneVectorPerInputInOrder", testOrder},
		{"Dims", testDims},
		{"Deterministic", testDeterministic},
		{"EmptyBatch", testEmptyBatch},
		{"DuplicateInputs", testDuplicates},
		{"Unicode", testUnicode},
		{"CanceledContext", testCanceled},
		{"Similarity", testSimilarity},
		{"Model", testModel},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, newEmbedder(t, Dims))
		})
	}
}

func embed(t *testing.T, e embedder.Embedder, inputs ...string) [][]float32 {
	t.Helper()
	vecs, err := e.Embed(context.Background(), inputs)
	if err != nil {
		t.Fatalf("Embed(%d inputs): %v", len(inputs), err)
	}
	if len(vecs) != len(inputs) {
		t.Fatalf("Embed(%d inputs) returned %d vectors", len(inputs), len(vecs))
	}
	for i, v := range vecs {
		for j, x := range v {
			if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
				t.Fatalf("vector %d holds %v at %d", i, x, j)
			}
		}
	}
	return vecs
}

func cosine(a, b []float32) float64 {
	var dot, na, nb float64
	for i := range a {
		dot += float64(a[i]) * float64(b[i])
		na += float64(a[i]) * float64(a[i])
		nb += float64(b[i]) * float64(b[i])
	}
	if na == 0 || nb == 0 {
		return 0
	}
	return dot / math.Sqrt(na*nb)
}

// same tolerates the tiny drift some providers show between identical
// requests.
func same(a, b []float32) bool {
	return len(a) == len(b) && cosine(a, b) > 0.9999
}

func testOrder(t *testing.T, e embedder.Embedder) {
	inputs := []string{
		"the first document talks about rivers",
		"a second one about mountains",
		"third: databases and indexes",
		"fourth, on cooking pasta",
		"fifth and last, on sailing",
	}
	batch := embed(t, e, inputs...)
	for i, in := range inputs {
		alone := embed(t, e, in)[0]
		if !same(batch[i], alone) {
			t.Errorf("batch vector %d is not the vector of input %d embedded alone: order not kept", i, i)
		}
		for j := range inputs {
			if j != i && same(batch[j], alone) {
				t.Errorf("input %d's vector also sits at position %d", i, j)
			}
		}
	}
}

func testDims(t *testing.T, e embedder.Embedder) {
	vecs := embed(t, e, "one", "two words", "three little words")
	if e.Dims() != Dims {
		t.Errorf("Dims() = %d, want %d", e.Dims(), Dims)
	}
	for i, v := range vecs {
		if len(v) != Dims {
			t.Errorf("vector %d has %d dimensions, want %d", i, len(v), Dims)
		}
	}
}

func testDeterministic(t *testing.T, e embedder.Embedder) {
	a := embed(t, e, "deterministic embeddings are reproducible")[0]
	b := embed(t, e, "deterministic embeddings are reproducible")[0]
	if !same(a, b) {
		t.Errorf("two embeddings of one text differ (cos %.6f)", cosine(a, b))
	}
}

func testEmptyBatch(t *testing.T, e embedder.Embedder) {
	for _, inputs := range [][]string{nil, {}} {
		vecs, err := e.Embed(context.Background(), inputs)
		if err != nil {
			t.Errorf("Embed(%#v): %v, want no error", inputs, err)
		}
		if len(vecs) != 0 {
			t.Errorf("Embed(%#v) returned %d vectors, want 0", inputs, len(vecs))
		}
	}
}

func testDuplicates(t *testing.T, e embedder.Embedder) {
	vecs := embed(t, e, "repeat me", "something else", "repeat me")
	if !same(vecs[0], vecs[2]) {
		t.Error("the same text twice in a batch got different vectors")
	}
	if same(vecs[0], vecs[1]) {
		t.Error("different texts got the same vector")
	}
}

func testUnicode(t *testing.T, e embedder.Embedder) {
	vecs := embed(t, e, "naïve café", "東京の天気", "emoji 🚀 and \"quotes\"\n\ttabs \\ backslashes", "\u2028line separator")
	for i, v := range vecs {
		if len(v) != Dims {
			t.Errorf("vector %d has %d dimensions", i, len(v))
		}
	}
}

func testCanceled(t *testing.T, e embedder.Embedder) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	vecs, err := e.Embed(ctx, []string{"never embedded"})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Embed with a canceled context: vecs=%d err=%v, want an error matching context.Canceled", len(vecs), err)
	}
}

func testSimilarity(t *testing.T, e embedder.Embedder) {
	vecs := embed(t, e,
		"the quick brown fox jumps over the lazy dog",
		"a quick brown fox leaps over a lazy dog",
		"quarterly revenue grew in the finance department",
	)
	near, far := cosine(vecs[0], vecs[1]), cosine(vecs[0], vecs[2])
	if near <= far {
		t.Errorf("cos(similar texts) = %.3f <= cos(unrelated texts) = %.3f", near, far)
	}
}

func testModel(t *testing.T, e embedder.Embedder) {
	if e.Model() == "" {
		t.Error("Model() is empty")
	}
}
