package bench

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/chunk"
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

// The parts measured over the documents' chunks move those chunks: the
// first n of the corpus under the producer's chunking, in order, each
// its own record; a corpus with fewer is an error.
func TestDocsChunkRecords(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	if _, err := GenerateDocsCorpus(&b, 300, 1); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "docs.jsonl")
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	docs, err := readCorpus(path)
	if err != nil {
		t.Fatal(err)
	}
	first := chunk.Split(docs[0].Text, chunk.DefaultConfig())
	recs, err := docsChunkRecords(path, 200)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 200 {
		t.Fatalf("%d records, want 200", len(recs))
	}
	for i, c := range first {
		if recs[i].Text != c.Text || !strings.HasPrefix(recs[i].ID, docs[0].ID) {
			t.Fatalf("record %d is %q of %s, want chunk %d of %s", i, recs[i].Text[:min(40, len(recs[i].Text))], recs[i].ID, i, docs[0].ID)
		}
	}
	if len(recs[0].Text) == len(docs[0].Text) && len(first) > 1 {
		t.Error("a record holds its whole document")
	}
	if _, err := docsChunkRecords(path, 100_000); err == nil {
		t.Error("asked for more chunks than the corpus holds: no error")
	}
}
