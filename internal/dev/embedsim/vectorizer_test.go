package embedsim

import (
	"math"
	"testing"
)

func embed(text string, dims int) []float32 {
	v := make([]float32, dims)
	EmbedInto(v, text)
	return v
}

func cosine(a, b []float32) float64 {
	var dot, na, nb float64
	for i := range a {
		dot += float64(a[i]) * float64(b[i])
		na += float64(a[i]) * float64(a[i])
		nb += float64(b[i]) * float64(b[i])
	}
	return dot / math.Sqrt(na*nb)
}

func TestEmbedIntoSimilarity(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		anchor, near, far string
	}{
		{"the quick brown fox jumps over the lazy dog", "a quick brown fox leaped over a lazy dog", "quarterly revenue grew in the finance department"},
		{"PostgreSQL vector index build", "building a vector index in postgresql", "the cat sat on the mat"},
		{"embedding pipeline", "embeddings pipelines", "weather forecast"},
		{"Ünïcödé naïve café", "unicode naive cafe naïve café", "train timetable"},
		{"東京 の 天気", "東京 の 天気 予報", "ロンドン 地下鉄"},
	} {
		a, n, f := embed(tc.anchor, 384), embed(tc.near, 384), embed(tc.far, 384)
		if near, far := cosine(a, n), cosine(a, f); near <= far {
			t.Errorf("%q: cos(near)=%.3f <= cos(far)=%.3f", tc.anchor, near, far)
		}
	}
}

func TestEmbedIntoDeterministicAndNormalised(t *testing.T) {
	t.Parallel()
	for _, text := range []string{"hello world", "", "   ", "!!!", "a", "Hello, World"} {
		for _, dims := range []int{1, 3, 384, 1536} {
			a, b := embed(text, dims), embed(text, dims)
			var norm float64
			for i := range a {
				if a[i] != b[i] {
					t.Fatalf("%q/%d: not deterministic at %d", text, dims, i)
				}
				norm += float64(a[i]) * float64(a[i])
			}
			if math.Abs(norm-1) > 1e-5 {
				t.Errorf("%q/%d: squared norm %v, want 1", text, dims, norm)
			}
		}
	}
}

func TestEmbedIntoCaseInsensitive(t *testing.T) {
	t.Parallel()
	a, b := embed("Hello World", 64), embed("hello world", 64)
	if c := cosine(a, b); c < 0.9999 {
		t.Errorf("cos = %v, want 1: case must not matter", c)
	}
	if c := cosine(embed("!!!", 64), embed("???", 64)); c > 0.9999 {
		t.Errorf("featureless texts share a vector (cos %v); want distinct deterministic vectors", c)
	}
}

func TestEmbedIntoDoesNotAllocate(t *testing.T) {
	v := make([]float32, 384)
	text := "The quick brown fox — naïve café, 東京 2024!"
	if n := testing.AllocsPerRun(100, func() { EmbedInto(v, text) }); n != 0 {
		t.Errorf("EmbedInto allocates %v times per call, want 0", n)
	}
}

func BenchmarkEmbedInto(b *testing.B) {
	v := make([]float32, 384)
	text := "Sluice ingests document corpora into a vector store through an embedding API and guarantees that every chunk ends as exactly one stored vector."
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		EmbedInto(v, text)
	}
}
