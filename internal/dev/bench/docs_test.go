package bench

import (
	"bytes"
	"testing"
)

// The documents corpus has the sizes of a real one, 1 to 40 chunks and
// about 8 at the median, under the producer's own chunking, and the
// same seed gives the same bytes.
func TestDocsCorpusShape(t *testing.T) {
	t.Parallel()
	var a, b bytes.Buffer
	stats, err := GenerateDocsCorpus(&a, 20_000, 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := GenerateDocsCorpus(&b, 20_000, 1); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Fatal("the same seed gave two corpora")
	}
	t.Logf("%+v", stats)
	if stats.Chunks < 20_000 || stats.MinChunks < 1 || stats.MinChunks > 2 || stats.MaxChunks < 30 || stats.MaxChunks > 45 ||
		stats.MedianChunks < 7 || stats.MedianChunks > 9 {
		t.Errorf("corpus %+v: want at least 20,000 chunks, 1–40 a document, about 8 at the median", stats)
	}
}
