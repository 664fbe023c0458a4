package manifest_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/localenv"
	"github.com/sluicehq/sluice/internal/manifest"
)

// A publish confirmation and a store of the same chunks, given their rows
// in opposite orders, do not deadlock.
func TestConfirmAndStoreOfTheSameChunksDoNotDeadlock(t *testing.T) {
	t.Parallel()
	b := setup(t)
	// Locking in the order given, the confirmation would hold b and wait
	// for x while the store held a and waited for y; once x and y are
	// released each would wait for the other.
	b.race(t, race{held: "x y", confirm: "b x a", settle: "a y b", name: "store"}, func(c manifest.Chunks) error {
		return manifest.MarkStored(b.ctx, b.pool, c, make([]int32, c.Len()))
	})
	for _, id := range []string{"a", "b", "y"} {
		if st, _ := b.row(t, id); st != manifest.Stored {
			t.Errorf("chunk %s is %s, want stored", id, st)
		}
	}
}

// A publish confirmation and a park of the same chunks, given their rows
// in opposite orders, do not deadlock: a consumer parks a batch's poison
// chunks in one transaction while the producer confirms their window.
func TestConfirmAndParkOfTheSameChunksDoNotDeadlock(t *testing.T) {
	t.Parallel()
	b := setup(t)
	// Parking row by row in the order given, the park would hold x and
	// wait for a, which the confirmation holds while it waits for b; once
	// b is released the confirmation would wait for x.
	b.race(t, race{held: "b", confirm: "b x a", settle: "x a", name: "park"}, func(c manifest.Chunks) error {
		fs := make([]manifest.Failure, c.Len())
		for i := range fs {
			fs[i] = manifest.Failure{DocID: c.DocIDs[i], Index: int(c.Indexes[i]), Version: c.Versions[i], Attempts: 1, Class: "invalid_input"}
		}
		moved, err := manifest.Park(b.ctx, b.pool, fs)
		if err == nil && slices.Contains(moved, false) {
			err = fmt.Errorf("moved %v, want all", moved)
		}
		return err
	})
	for _, id := range []string{"a", "x"} {
		if st, _ := b.row(t, id); st != manifest.Parked {
			t.Errorf("chunk %s is %s, want parked", id, st)
		}
	}
}

// race is a forced interleaving of a publish confirmation and a settling
// statement over chunks named by space-separated document ids: a third
// transaction holds the rows held, the confirmation starts, then settle.
type race struct {
	held, confirm, settle string
	name                  string // what settle does, for messages
}

// race runs r: both statements must succeed. Locking in key order, the
// confirmation takes its rows from the lowest up and settle queues
// behind it; locking in any other order, the two can each hold a row the
// other waits for, and PostgreSQL aborts one with "deadlock detected".
func (b *testBundle) race(t *testing.T, r race, settle func(manifest.Chunks) error) {
	t.Helper()
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
	chunks := func(ids string) manifest.Chunks {
		c := manifest.MakeChunks(3)
		for _, id := range strings.Fields(ids) {
			c.Add(id, 0, 2)
		}
		return c
	}
	blocker, err := b.pool.Begin(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer blocker.Rollback(b.ctx)
	if _, err := blocker.Exec(b.ctx, `SELECT 1 FROM ingest_manifest WHERE doc_id = ANY($1) FOR UPDATE`, strings.Fields(r.held)); err != nil {
		t.Fatal(err)
	}

	confirmed, settled := make(chan error, 1), make(chan error, 1)
	go func() { confirmed <- manifest.ConfirmPublished(b.ctx, b.pool, chunks(r.confirm), []int64{1, 2, 3}) }()
	b.waitForLockWaits(t, 1)
	go func() { settled <- settle(chunks(r.settle)) }()
	b.waitForLockWaits(t, 2)
	if err := blocker.Commit(b.ctx); err != nil {
		t.Fatal(err)
	}

	for what, done := range map[string]chan error{"confirmation": confirmed, r.name: settled} {
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("%s: %v", what, err)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("%s did not finish", what)
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
