//go:build !race

// The corpus generators' shape tests run without the race detector
// (`make test` runs them in a pass of their own): each draws tens of
// thousands of chunks through the tokenizer in one goroutine, which the
// detector slows thirtyfold and in which it has nothing to find.

package bench

import (
	"bytes"
	"math"
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

// The reuse corpus repeats about 30% of its chunks, both right after
// their original and far back, and its edited twin changes a few chunks
// of each document, not all of them.
func TestGenerateReuseCorpus(t *testing.T) {
	t.Parallel()
	var corpus, edited bytes.Buffer
	st, err := GenerateReuseCorpus(&corpus, &edited, 10_000, 1)
	if err != nil {
		t.Fatal(err)
	}
	if share := float64(st.RepeatedChunks) / float64(st.Chunks); math.Abs(share-reuseRepeatShare) > 0.02 {
		t.Errorf("%d of %d chunks repeated (%.3f), want about %.2f", st.RepeatedChunks, st.Chunks, share, reuseRepeatShare)
	}
	if st.DistinctChunks != st.Chunks-st.RepeatedChunks {
		t.Errorf("%d distinct chunks, want %d: the originals share no chunk and every repeat is whole", st.DistinctChunks, st.Chunks-st.RepeatedChunks)
	}
	if st.NearRepeats == 0 || st.FarRepeats == 0 {
		t.Errorf("%d near and %d far repeats, want both", st.NearRepeats, st.FarRepeats)
	}
	if st.EditedNewChunks < st.Documents-st.NearRepeats-st.FarRepeats || st.EditedNewChunks > st.EditedChunks/4 {
		t.Errorf("the edits make %d of %d chunks new in %d documents", st.EditedNewChunks, st.EditedChunks, st.Documents)
	}
	if st.ManifestRows < st.Chunks || st.ManifestRows < st.EditedChunks {
		t.Errorf("%d manifest rows for %d and %d chunks", st.ManifestRows, st.Chunks, st.EditedChunks)
	}
	var again, againEdited bytes.Buffer
	if _, err := GenerateReuseCorpus(&again, &againEdited, 10_000, 1); err != nil || !bytes.Equal(again.Bytes(), corpus.Bytes()) ||
		!bytes.Equal(againEdited.Bytes(), edited.Bytes()) {
		t.Errorf("the corpus is not deterministic (%v)", err)
	}
	t.Logf("%+v", st)
}
