package storetest

import (
	"testing"

	"github.com/sluicehq/sluice/pkg/vectorstore"
)

// testRetainServesOldVersion re-indexes a document blue/green: while its
// version 2 is being stored, search serves version 1 whole, from the rows
// version 2 has not replaced and those Retain kept; once version 2 is
// complete and the kept rows released, version 2 alone is served.
func testRetainServesOldVersion(t *testing.T, b *bundle) {
	b.insertDocuments(t, document{"doc", "s", 1, "ready", 2})
	near := axis(b.dims, 0, 0)
	b.upsert(t, b.db, b.chunkAt("doc", 0, 1, near), b.chunkAt("doc", 1, 1, axis(b.dims, 0, 0.5)))
	if _, err := b.db.Exec(b.ctx, `UPDATE documents SET version = 2, status = 'processing', live_version = 1 WHERE doc_id = 'doc'`); err != nil {
		t.Fatal(err)
	}
	if err := b.store.Retain(b.ctx, b.db, []string{"doc"}, []int32{0}); err != nil {
		t.Fatalf("Retain: %v", err)
	}
	b.upsert(t, b.db, b.chunkAt("doc", 0, 2, near))
	hits := b.search(t, near, vectorstore.SearchOptions{K: 10})
	assertKeys(t, hits, "doc/0", "doc/1")
	for _, h := range hits {
		if h.Version != 1 {
			t.Errorf("hit %s/%d at version %d while version 2 is incomplete, want 1", h.DocID, h.ChunkIndex, h.Version)
		}
	}

	b.upsert(t, b.db, b.chunkAt("doc", 1, 2, axis(b.dims, 0, 0.5)))
	if _, err := b.db.Exec(b.ctx, `UPDATE documents SET status = 'ready', live_version = 2 WHERE doc_id = 'doc'`); err != nil {
		t.Fatal(err)
	}
	if err := b.store.Release(b.ctx, b.db, []string{"doc"}); err != nil {
		t.Fatalf("Release: %v", err)
	}
	hits = b.search(t, near, vectorstore.SearchOptions{K: 10})
	assertKeys(t, hits, "doc/0", "doc/1")
	for _, h := range hits {
		if h.Version != 2 {
			t.Errorf("hit %s/%d at version %d once version 2 is complete, want 2", h.DocID, h.ChunkIndex, h.Version)
		}
	}
}

// testRetainRefused holds a store that keeps no served version aside to
// saying so: Retain and Release fail rather than pretend.
func testRetainRefused(t *testing.T, b *bundle) {
	b.insertDocuments(t, document{"doc", "s", 1, "ready", 1})
	b.upsert(t, b.db, b.chunkAt("doc", 0, 1, axis(b.dims, 0, 0)))
	if err := b.store.Retain(b.ctx, b.db, []string{"doc"}, []int32{0}); err == nil {
		t.Error("Retain succeeded on a store without retention")
	}
	if err := b.store.Release(b.ctx, b.db, []string{"doc"}); err == nil {
		t.Error("Release succeeded on a store without retention")
	}
}
