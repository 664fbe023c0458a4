package bench

import (
	"slices"
	"testing"
)

// Each table's size is the median over the repetitions, in the order the
// first repetition lists the tables.
func TestStorageMedian(t *testing.T) {
	t.Parallel()
	rep := func(vecs, manifest int64) RepResult {
		return RepResult{Storage: []TableSize{{"chunk_embeddings", vecs, 10}, {"ingest_manifest", manifest, 20}}}
	}
	got := storageMedian([]RepResult{rep(300, 50), rep(100, 70), rep(200, 60)})
	want := []TableSize{{"chunk_embeddings", 200, 10}, {"ingest_manifest", 60, 20}}
	if !slices.Equal(got, want) {
		t.Errorf("storageMedian = %+v, want %+v", got, want)
	}
	if got := storageMedian(nil); got != nil {
		t.Errorf("storageMedian(nil) = %+v", got)
	}
}
