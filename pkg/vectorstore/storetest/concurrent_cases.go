package storetest

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice/pkg/vectorstore"
)

// testConcurrentWriter has a second transaction upsert a chunk that a first
// one inserted but has not committed. The second blocks on the row, and by
// the time it proceeds the row exists but was not there when its statement
// began — the case where a store must not guess an outcome.
func testConcurrentWriter(t *testing.T, b *bundle) {
	cases := []struct {
		name   string
		first  vectorstore.Record
		second vectorstore.Record
		want   vectorstore.Outcome
		stored vectorstore.Record
	}{
		{"NewerCommittedFirst", b.record("doc", 0, 2, "h2"), b.record("doc", 0, 1, "h1"), vectorstore.Stale, b.record("doc", 0, 2, "h2")},
		{"SameCommittedFirst", b.record("doc", 0, 1, "h1"), b.record("doc", 0, 1, "h1"), vectorstore.Unchanged, b.record("doc", 0, 1, "h1")},
		{"OlderCommittedFirst", b.record("doc", 0, 1, "h1"), b.record("doc", 0, 2, "h2"), vectorstore.Updated, b.record("doc", 0, 2, "h2")},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if _, err := b.db.Exec(b.ctx, `DELETE FROM `+b.rows()); err != nil {
				t.Fatal(err)
			}
			tx1 := b.begin(t)
			assertOutcomes(t, b.upsert(t, tx1, c.first), vectorstore.Inserted)

			tx2 := b.begin(t)
			var pid int
			if err := tx2.QueryRow(b.ctx, `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
				t.Fatal(err)
			}
			done := make(chan upsertResult, 1)
			go func() {
				out, err := b.store.Upsert(b.ctx, tx2, []vectorstore.Record{c.second})
				done <- upsertResult{out, err}
			}()
			b.awaitLockWait(t, pid, done)

			if err := tx1.Commit(b.ctx); err != nil {
				t.Fatalf("commit first writer: %v", err)
			}
			var res upsertResult
			select {
			case res = <-done:
			case <-time.After(30 * time.Second):
				t.Fatal("second writer still blocked 30s after the first committed")
			}
			if res.err != nil {
				t.Fatalf("second Upsert: %v", res.err)
			}
			assertOutcomes(t, res.out, c.want)
			if err := tx2.Commit(b.ctx); err != nil {
				t.Fatalf("commit second writer: %v", err)
			}
			b.assertStored(t, c.stored)
		})
	}
}

type upsertResult struct {
	out []vectorstore.Outcome
	err error
}

// awaitLockWait polls until backend pid waits on a lock, failing the test if
// the upsert finishes first (it did not wait for the uncommitted row) or
// does not block within the deadline.
func (b *bundle) awaitLockWait(t *testing.T, pid int, done <-chan upsertResult) {
	t.Helper()
	deadline := time.After(30 * time.Second)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		var waiting bool
		err := b.db.QueryRow(b.ctx,
			`SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE pid = $1 AND wait_event_type = 'Lock')`, pid).Scan(&waiting)
		if err != nil {
			t.Fatalf("poll pg_stat_activity: %v", err)
		}
		if waiting {
			return
		}
		select {
		case res := <-done:
			t.Fatalf("second Upsert returned %v, %v without waiting for the first writer's row", res.out, res.err)
		case <-deadline:
			t.Fatal("second Upsert did not block on the first writer's row within 30s")
		case <-tick.C:
		}
	}
}
