package manifest_test

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/localenv"
	"github.com/sluicehq/sluice/internal/manifest"
)

// A publish confirmation and a store of the same chunks, given their rows
// in opposite orders, do not deadlock. The interleaving is forced: a
// third transaction holds x and y, the confirmation (b, x, a) starts,
// then the store (a, y, b). Locking in the order given, the confirmation
// would hold b and wait for x while the store held a and waited for y;
// once x and y are released each would wait for the other, and
// PostgreSQL would abort one with "deadlock detected". Locking in key
// order, the confirmation holds a and b and the store waits behind it.
func TestConfirmAndStoreOfTheSameChunksDoNotDeadlock(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, id := range []string{"a", "b", "x", "y"} {
		b.seed(t, id, manifest.Pending)
	}
	// A manifest of realistic size, so that the planner reads the rows
	// named through the primary key in the order given, as it does in
	// production, rather than scanning a four-row table in key order.
	if _, err := b.pool.Exec(b.ctx, `
		INSERT INTO documents (doc_id, source_id, source_native_id, version, content_hash, chunk_count, status)
		SELECT 'filler-' || i, 's', 'filler-' || i, 1, 'h', 1, 'processing' FROM generate_series(1, 20000) i;
		INSERT INTO ingest_manifest (doc_id, chunk_index, version, content_hash, status, job)
		SELECT 'filler-' || i, 0, 1, 'h', 'pending', '\x7b7d' FROM generate_series(1, 20000) i;
		ANALYZE documents, ingest_manifest`); err != nil {
		t.Fatal(err)
	}
	chunks := func(ids ...string) manifest.Chunks {
		c := manifest.MakeChunks(len(ids))
		for _, id := range ids {
			c.Add(id, 0, 2)
		}
		return c
	}
	blocker, err := b.pool.Begin(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer blocker.Rollback(b.ctx)
	if _, err := blocker.Exec(b.ctx, `SELECT 1 FROM ingest_manifest WHERE doc_id IN ('x', 'y') FOR UPDATE`); err != nil {
		t.Fatal(err)
	}

	confirmed, stored := make(chan error, 1), make(chan error, 1)
	go func() { confirmed <- manifest.ConfirmPublished(b.ctx, b.pool, chunks("b", "x", "a"), []int64{1, 2, 3}) }()
	b.waitForLockWaits(t, 1)
	go func() { stored <- manifest.MarkStored(b.ctx, b.pool, chunks("a", "y", "b"), []int32{1, 1, 1}) }()
	b.waitForLockWaits(t, 2)
	if err := blocker.Commit(b.ctx); err != nil {
		t.Fatal(err)
	}

	for name, done := range map[string]chan error{"confirmation": confirmed, "store": stored} {
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("%s: %v", name, err)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("%s did not finish", name)
		}
	}
	for _, id := range []string{"a", "b", "y"} {
		if st, _ := b.row(t, id); st != manifest.Stored {
			t.Errorf("chunk %s is %s, want stored", id, st)
		}
	}
}

// waitForLockWaits waits until n sessions of the database wait for a
// row lock.
func (b *testBundle) waitForLockWaits(t *testing.T, n int) {
	t.Helper()
	ok := localenv.Poll(10*time.Second, func() bool {
		var waiting int
		err := b.pool.QueryRow(b.ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&waiting)
		return err == nil && waiting >= n
	})
	if !ok {
		t.Fatalf("timed out waiting for %d sessions to wait for a lock", n)
	}
}
