package vectorstore_test

import (
	"testing"

	"github.com/sluicehq/sluice/internal/dev/testenv"
	"github.com/sluicehq/sluice/pkg/vectorstore"
)

// A chunk whose served version sits in both tables is served twice by
// search; CountServedTwice finds it, and finds nothing in the states
// Retain and Release leave behind.
func TestCountServedTwice(t *testing.T) {
	t.Parallel()
	_, db := openStore(t, testenv.DefaultBackend, testDims)
	ctx, pool := t.Context(), db.Pool
	exec := func(sql string, args ...any) {
		t.Helper()
		if _, err := pool.Exec(ctx, sql, args...); err != nil {
			t.Fatal(err)
		}
	}
	count := func() int {
		t.Helper()
		n, err := vectorstore.CountServedTwice(ctx, pool)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	// "swap" is being re-indexed (version 2, serving 1); "done" is ready
	// at version 1 with a leftover retained row, which search never serves.
	exec(`INSERT INTO documents (doc_id, source_id, source_native_id, version, live_version, content_hash, chunk_count, status)
		VALUES ('swap', 's', 'swap', 2, 1, 'h2', 2, 'processing'), ('done', 's', 'done', 1, 1, 'h1', 1, 'ready')`)
	exec(`INSERT INTO chunk_embeddings (doc_id, chunk_index, version, content_hash, model, dims, embedding, text)
		SELECT d, i, 1, 'h', 'm', $1, array_fill(0.5::real, ARRAY[$1::int]), 't'
		FROM (VALUES ('swap', 0), ('swap', 1), ('done', 0)) AS v(d, i)`, testDims)
	// swap's chunk 0 was retained and replaced by version 2, as Retain
	// and Upsert leave it; done's row is a stale copy of a ready version.
	exec(`INSERT INTO chunk_embeddings_previous SELECT * FROM chunk_embeddings WHERE (doc_id, chunk_index) IN (('swap', 0), ('done', 0))`)
	exec(`UPDATE chunk_embeddings SET version = 2 WHERE doc_id = 'swap' AND chunk_index = 0`)
	if n := count(); n != 0 {
		t.Fatalf("%d chunks served twice in a consistent store; want 0", n)
	}
	// A retained copy of a row that was never replaced is served twice.
	exec(`INSERT INTO chunk_embeddings_previous SELECT * FROM chunk_embeddings WHERE doc_id = 'swap' AND chunk_index = 1`)
	if n := count(); n != 1 {
		t.Fatalf("%d chunks served twice with swap's chunk 1 in both tables; want 1", n)
	}
}
