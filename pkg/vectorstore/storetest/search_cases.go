package storetest

import (
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/sluicehq/sluice/pkg/classify"
	"github.com/sluicehq/sluice/pkg/vectorstore"
)

// chunkAt returns a record for doc/chunk at version with the given vector.
func (b *bundle) chunkAt(docID string, chunk int, version int64, v []float32) vectorstore.Record {
	rec := b.record(docID, chunk, version, fmt.Sprintf("h%d", version))
	rec.Embedding = v
	return rec
}

func (b *bundle) search(t *testing.T, q []float32, opts vectorstore.SearchOptions) []vectorstore.Hit {
	t.Helper()
	hits, err := b.store.Search(b.ctx, b.db, q, opts)
	if err != nil {
		t.Fatalf("Search: %v", err)
	}
	return hits
}

func hitKeys(hits []vectorstore.Hit) []string {
	keys := make([]string, len(hits))
	for i, h := range hits {
		keys[i] = fmt.Sprintf("%s/%d", h.DocID, h.ChunkIndex)
	}
	return keys
}

func assertKeys(t *testing.T, hits []vectorstore.Hit, want ...string) {
	t.Helper()
	got := hitKeys(hits)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("hits %v, want %v", got, want)
	}
}

// cosine of axis(dims, 0, 0) and axis(dims, 0, w).
func axisCosine(w float32) float64 {
	return 1 / math.Sqrt(1+float64(w)*float64(w))
}

func testSearchOrder(t *testing.T, b *bundle) {
	b.insertDocuments(t, document{"d1", "s1", 1, "ready", 3}, document{"d2", "s1", 1, "ready", 4})
	b.upsert(t, b.db,
		b.chunkAt("d1", 0, 1, axis(b.dims, 0, 0.5)),
		b.chunkAt("d1", 1, 1, axis(b.dims, 2, 0)), // orthogonal
		b.chunkAt("d1", 2, 1, axis(b.dims, 0, 0)), // identical direction
		b.chunkAt("d2", 0, 1, axis(b.dims, 0, 2)),
		b.chunkAt("d2", 1, 1, axis(b.dims, 0, 0.5)),           // ties with d1/0
		b.chunkAt("d2", 2, 1, scaled(axis(b.dims, 0, 0), -3)), // opposite
		b.chunkAt("d2", 3, 1, make([]float32, b.dims)),        // no direction at all
	)
	q := scaled(axis(b.dims, 0, 0), 7) // length must not matter
	hits := b.search(t, q, vectorstore.SearchOptions{})
	assertKeys(t, hits, "d1/2", "d1/0", "d2/1", "d2/0", "d1/1", "d2/2", "d2/3")
	want := []float64{1, axisCosine(0.5), axisCosine(0.5), axisCosine(2), 0, -1, 0}
	for i, h := range hits {
		if math.Abs(h.Score-want[i]) > 1e-5 {
			t.Errorf("hit %d (%s/%d) score %.7f, want %.7f", i, h.DocID, h.ChunkIndex, h.Score, want[i])
		}
	}
	first := hits[0]
	if first.Version != 1 || first.Text != b.chunkAt("d1", 2, 1, nil).Text || string(first.Metadata) == "" {
		t.Errorf("first hit %+v lacks the stored version, text or metadata", first)
	}
}

func scaled(v []float32, f float32) []float32 {
	out := make([]float32, len(v))
	for i := range v {
		out[i] = v[i] * f
	}
	return out
}

func testSearchVisibility(t *testing.T, b *bundle) {
	b.insertDocuments(t,
		document{"ready", "s", 2, "ready", 2},
		document{"pending", "s", 1, "pending", 1},
		document{"processing", "s", 1, "processing", 1},
		document{"failed", "s", 1, "failed", 1},
	)
	near := axis(b.dims, 0, 0)
	b.upsert(t, b.db,
		b.chunkAt("ready", 0, 2, axis(b.dims, 0, 1)),
		b.chunkAt("ready", 1, 1, near), // left over from version 1
		b.chunkAt("ready", 2, 3, near), // from a version 3 still being indexed
		b.chunkAt("pending", 0, 1, near),
		b.chunkAt("processing", 0, 1, near),
		b.chunkAt("failed", 0, 1, near),
		b.chunkAt("orphan", 0, 1, near), // no documents row at all
	)
	hits := b.search(t, near, vectorstore.SearchOptions{K: 100})
	assertKeys(t, hits, "ready/0")
	if hits[0].Version != 2 {
		t.Errorf("hit version %d, want the document's 2", hits[0].Version)
	}
}

func testSearchSourceAndK(t *testing.T, b *bundle) {
	b.insertDocuments(t, document{"a", "s1", 1, "ready", 20}, document{"b", "s2", 1, "ready", 20})
	var recs []vectorstore.Record
	for i := range 20 {
		w := float32(i) / 10 // chunk i is the i-th nearest within its document
		recs = append(recs, b.chunkAt("a", i, 1, axis(b.dims, 0, w)), b.chunkAt("b", i, 1, axis(b.dims, 0, w+0.05)))
	}
	b.upsert(t, b.db, recs...)
	q := axis(b.dims, 0, 0)

	hits := b.search(t, q, vectorstore.SearchOptions{})
	if len(hits) != vectorstore.DefaultSearchK {
		t.Errorf("default K returned %d hits, want %d", len(hits), vectorstore.DefaultSearchK)
	}
	assertKeys(t, b.search(t, q, vectorstore.SearchOptions{K: 3}), "a/0", "b/0", "a/1")
	assertKeys(t, b.search(t, q, vectorstore.SearchOptions{K: 3, SourceID: "s2"}), "b/0", "b/1", "b/2")
	if hits := b.search(t, q, vectorstore.SearchOptions{K: vectorstore.MaxSearchK, SourceID: "s1"}); len(hits) != 20 {
		t.Errorf("source s1 returned %d hits, want its 20 chunks", len(hits))
	} else {
		for _, h := range hits {
			if h.DocID != "a" {
				t.Fatalf("source s1 returned %s/%d of source s2", h.DocID, h.ChunkIndex)
			}
		}
	}
	if hits := b.search(t, q, vectorstore.SearchOptions{SourceID: "none"}); len(hits) != 0 {
		t.Errorf("unknown source returned %v", hitKeys(hits))
	}
}

func testSearchValidation(t *testing.T, b *bundle) {
	b.insertDocuments(t, document{"a", "s", 1, "ready", 1})
	b.upsert(t, b.db, b.chunkAt("a", 0, 1, axis(b.dims, 0, 0)))
	nan := axis(b.dims, 0, 0)
	nan[1] = float32(math.NaN())
	for _, c := range []struct {
		name  string
		q     []float32
		class string
	}{
		{"ShortQuery", make([]float32, b.dims-1), classify.ClassDimensionMismatch},
		{"LongQuery", axis(b.dims+1, 0, 0), classify.ClassDimensionMismatch},
		{"NaN", nan, classify.ClassInvalidVector},
		{"Zero", make([]float32, b.dims), classify.ClassInvalidVector},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := b.store.Search(b.ctx, b.db, c.q, vectorstore.SearchOptions{})
			if !errors.Is(err, classify.ErrPermanent) || classify.Classify(err).Class != c.class {
				t.Errorf("Search error %v, want a permanent %s error", err, c.class)
			}
		})
	}
	for _, k := range []int{-1, vectorstore.MaxSearchK + 1} {
		if _, err := b.store.Search(b.ctx, b.db, axis(b.dims, 0, 0), vectorstore.SearchOptions{K: k}); err == nil {
			t.Errorf("Search with K=%d succeeded, want an error", k)
		}
	}
}
