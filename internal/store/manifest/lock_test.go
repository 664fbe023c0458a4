package manifest_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/dev/localenv"
	"github.com/sluicehq/sluice/internal/store/manifest"
)

// A publish confirmation and a store of the same chunks, given their rows
// in opposite orders, do not deadlock. Locking in the order given, the
// confirmation would hold b and wait for x while the store held a and
// waited for y; once x and y are released each would wait for the other.
func TestConfirmAndStoreOfTheSameChunksDoNotDeadlock(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.race(t, "x y", b.confirm("b x a"), op{"store", func() error {
		return manifest.MarkStored(b.ctx, b.pool, chunks("a y b"), []int32{1, 1, 1}, nil)
	}})
	for _, id := range []string{"a", "b", "y"} {
		if st, _ := b.row(t, id); st != manifest.Stored {
			t.Errorf("chunk %s is %s, want stored", id, st)
		}
	}
}

// A publish confirmation and a park of the same chunks, given their rows
// in opposite orders, do not deadlock: a consumer parks a batch's poison
// chunks in one transaction while the producer confirms their window.
// Parking row by row in the order given, the park would hold x and wait
// for a, which the confirmation holds while it waits for b; once b is
// released the confirmation would wait for x.
func TestConfirmAndParkOfTheSameChunksDoNotDeadlock(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.race(t, "b", b.confirm("b x a"), op{"park", func() error {
		c := chunks("x a")
		fs := make([]manifest.Failure, c.Len())
		for i := range fs {
			fs[i] = manifest.Failure{DocID: c.DocIDs[i], Index: int(c.Indexes[i]), Version: c.Versions[i], Attempts: 1, Class: "invalid_input"}
		}
		moved, err := manifest.Park(b.ctx, b.pool, fs)
		if err == nil && slices.Contains(moved, false) {
			err = fmt.Errorf("moved %v, want all", moved)
		}
		return err
	}})
	for _, id := range []string{"a", "x"} {
		if st, _ := b.row(t, id); st != manifest.Parked {
			t.Errorf("chunk %s is %s, want parked", id, st)
		}
	}
}

// A producer recording new versions of documents in the order it read
// them, and a consumer locking some of the same documents to store their
// chunks, do not deadlock. Recording in the order given, the producer
// would hold b and wait for x while the consumer held a and waited for b;
// once x is released the producer would wait for a.
func TestRecordAndLockOfTheSameDocumentsDoNotDeadlock(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ids := strings.Fields("b x a")
	d := manifest.Documents{DocIDs: ids, NativeIDs: ids, Hashes: []string{"h3", "h3", "h3"},
		Statuses: []string{"pending", "pending", "pending"}, Codecs: []string{"", "", ""}, Metadata: []string{"{}", "{}", "{}"},
		Versions: []int64{3, 3, 3}, ChunkCounts: []int32{1, 1, 1}}
	b.race(t, "x", op{"record", func() error { return manifest.RecordDocuments(b.ctx, b.pool, "s", "run-2", d) }},
		op{"lock", func() error {
			_, err := manifest.LockDocuments(b.ctx, b.pool, strings.Fields("a b x"))
			return err
		}})
	for _, id := range ids {
		var version int64
		if err := b.pool.QueryRow(b.ctx, `SELECT version FROM documents WHERE doc_id = $1`, id).Scan(&version); err != nil || version != 3 {
			t.Errorf("document %s is at version %d (%v), want 3", id, version, err)
		}
	}
}

// A producer recording new versions of chunks in the order it read them,
// and a consumer storing the current versions of the same chunks, do not
// deadlock, for the same reason as the documents above.
func TestRecordAndStoreOfTheSameChunksDoNotDeadlock(t *testing.T) {
	t.Parallel()
	b := setup(t)
	next := manifest.MakeChunks(3)
	for _, id := range strings.Fields("b x a") {
		next.Add(id, 0, 3)
	}
	b.race(t, "x", op{"record", func() error {
		return manifest.RecordPending(b.ctx, b.pool, "run-2", next, []string{"h3", "h3", "h3"}, [][]byte{[]byte("{}"), []byte("{}"), []byte("{}")})
	}}, op{"store", func() error {
		return manifest.MarkStored(b.ctx, b.pool, chunks("a b x"), []int32{1, 1, 1}, nil)
	}})
	for _, id := range strings.Fields("a b x") {
		var version int64
		if err := b.pool.QueryRow(b.ctx, `SELECT version FROM ingest_manifest WHERE doc_id = $1`, id).Scan(&version); err != nil || version != 3 {
			t.Errorf("chunk %s is at version %d (%v), want 3", id, version, err)
		}
	}
}

// op is one side of a race: a statement run on its own connection.
type op struct {
	name string
	run  func() error
}

// confirm is the producer's publish confirmation of the chunks named.
func (b *testBundle) confirm(ids string) op {
	return op{"confirmation", func() error {
		return manifest.ConfirmPublished(b.ctx, b.pool, chunks(ids), []int64{1, 2, 3})
	}}
}

// chunks names chunk 0 at version 2 of each space-separated document id.
func chunks(ids string) manifest.Chunks {
	c := manifest.MakeChunks(3)
	for _, id := range strings.Fields(ids) {
		c.Add(id, 0, 2)
	}
	return c
}

// race forces an interleaving of first and second over documents a, b,
// x and y (each at version 2, with one pending chunk): a third
// transaction holds the documents and manifest rows of held, first
// starts and waits behind it, second starts and waits, then held is
// released. Both must succeed. Taking their locks in key order, first
// takes its rows from the lowest up and second queues behind it; in any
// other order the two can each hold a row the other waits for, and
// PostgreSQL aborts one with "deadlock detected".
func (b *testBundle) race(t *testing.T, held string, first, second op) {
	t.Helper()
	for _, id := range []string{"a", "b", "x", "y"} {
		b.seed(t, id, manifest.Pending)
	}
	// Tables of realistic size, so that the planner reads the rows named
	// through the primary key in the order given, as it does in
	// production, rather than scanning a four-row table in key order.
	if _, err := b.pool.Exec(b.ctx, `
		INSERT INTO documents (doc_id, source_id, source_native_id, version, content_hash, chunk_count, status)
		SELECT 'filler-' || i, 's', 'filler-' || i, 1, 'h', 1, 'processing' FROM generate_series(1, 20000) i;
		INSERT INTO ingest_manifest (doc_id, chunk_index, version, content_hash, status, job)
		SELECT 'filler-' || i, 0, 1, 'h', 'pending', '\x7b7d' FROM generate_series(1, 20000) i;
		ANALYZE documents, ingest_manifest`); err != nil {
		t.Fatal(err)
	}
	blocker, err := b.pool.Begin(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer blocker.Rollback(b.ctx)
	if _, err := blocker.Exec(b.ctx, `SELECT 1 FROM documents d JOIN ingest_manifest m USING (doc_id)
		WHERE doc_id = ANY($1) FOR UPDATE`, strings.Fields(held)); err != nil {
		t.Fatal(err)
	}

	done := map[string]chan error{first.name: make(chan error, 1), second.name: make(chan error, 1)}
	go func() { done[first.name] <- first.run() }()
	b.waitForLockWaits(t, 1)
	go func() { done[second.name] <- second.run() }()
	b.waitForLockWaits(t, 2)
	if err := blocker.Commit(b.ctx); err != nil {
		t.Fatal(err)
	}
	for name, ch := range done {
		select {
		case err := <-ch:
			if err != nil {
				t.Errorf("%s: %v", name, err)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("%s did not finish", name)
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
