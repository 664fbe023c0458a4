package runs_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/dev/testenv"
	"github.com/sluicehq/sluice/internal/store/runs"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// execer returns a function that runs a statement on db, failing t on an
// error.
func execer(t *testing.T, db *testenv.Database) func(q string, args ...any) {
	return func(q string, args ...any) {
		t.Helper()
		if _, err := db.Pool.Exec(context.Background(), q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// seedChunks records document d1 of source src, read by run, with one
// chunk of run per status.
func seedChunks(exec func(string, ...any), run, docStatus string, statuses ...string) {
	exec(`INSERT INTO documents (doc_id, source_id, source_native_id, run_id, version, content_hash, chunk_count, status)
	      VALUES ('d1', 'src', 'd1', $1, 1, 'h', $2, $3)`, run, len(statuses), docStatus)
	for i, st := range statuses {
		exec(`INSERT INTO ingest_manifest (doc_id, chunk_index, version, content_hash, status, run_id, job)
		      VALUES ('d1', $1, 1, 'h', $2, $3, '\x7b7d')`, i, st, run)
	}
}

// A run that ended with failures is refreshed again when its parked
// chunks are later stored by a replay, and ends completed.
func TestRefreshCompletesARunOnceItsParkedChunksAreStored(t *testing.T) {
	t.Parallel()
	db := testenv.NewDatabase(t)
	ctx := context.Background()
	exec := execer(t, db)
	exec(`INSERT INTO ingest_runs (run_id, source_id, publish_finished_at) VALUES ('r1', 'src', now())`)
	seedChunks(exec, "r1", "failed", "stored", "parked")
	check := func(want runs.Status, stored, parked int) {
		t.Helper()
		if err := runs.Refresh(ctx, db.Pool); err != nil {
			t.Fatal(err)
		}
		var st runs.Status
		var s, p int
		var finished bool
		if err := db.Pool.QueryRow(ctx, `SELECT status, stored, parked, finished_at IS NOT NULL FROM ingest_runs WHERE run_id = 'r1'`).Scan(&st, &s, &p, &finished); err != nil {
			t.Fatal(err)
		}
		if st != want || s != stored || p != parked || !finished {
			t.Errorf("run is %s with %d stored, %d parked, finished %v; want %s, %d, %d, finished", st, s, p, finished, want, stored, parked)
		}
	}
	check(runs.CompletedWithFailures, 1, 1)
	exec(`UPDATE ingest_manifest SET status = 'stored' WHERE chunk_index = 1`)
	check(runs.Completed, 2, 0)
}

// A run whose producer fell silent before it finished publishing stays
// running while any of its chunks is pending, then ends interrupted with
// what it had published; a beat of a producer that was only silent makes
// it running again, and its end completes it, as does the end of a
// producer silent until then.
func TestRefreshInterruptsARunWhoseProducerFellSilent(t *testing.T) {
	t.Parallel()
	db := testenv.NewDatabase(t)
	ctx := context.Background()
	exec := execer(t, db)
	for _, id := range []string{"silent", "alive", "late"} {
		if err := runs.Open(ctx, db.Pool, id, "src", 30*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	if err := runs.Beat(ctx, db.Pool, "silent", runs.Progress{Documents: 1, Published: 2}); err != nil {
		t.Fatal(err)
	}
	seedChunks(exec, "silent", "processing", "stored", "pending")
	exec(`UPDATE ingest_runs SET heartbeat_at = now() - interval '31 seconds' WHERE run_id IN ('silent', 'late')`)
	type row struct {
		status            runs.Status
		published, stored int
		finished          bool
		reason            string
	}
	check := func(id string, want row) {
		t.Helper()
		if err := runs.Refresh(ctx, db.Pool); err != nil {
			t.Fatal(err)
		}
		var got row
		if err := db.Pool.QueryRow(ctx, `SELECT status, published, stored, finished_at IS NOT NULL, coalesce(halted_reason, '')
			FROM ingest_runs WHERE run_id = $1`, id).Scan(&got.status, &got.published, &got.stored, &got.finished, &got.reason); err != nil {
			t.Fatal(err)
		}
		if got.status != want.status || got.published != want.published || got.stored != want.stored || got.finished != want.finished ||
			!strings.Contains(got.reason, want.reason) || (want.reason == "" && got.reason != "") {
			t.Errorf("run %s is %+v, want %+v", id, got, want)
		}
	}
	check("silent", row{status: runs.Running, published: 2, stored: 1})
	check("alive", row{status: runs.Running})
	check("late", row{status: runs.Interrupted, finished: true, reason: "having published 0 chunks"})
	if err := runs.EndPublishing(ctx, db.Pool, "late", runs.Progress{Documents: 1}, 0, nil); err != nil {
		t.Fatal(err)
	}
	check("late", row{status: runs.Completed, finished: true})

	exec(`UPDATE ingest_manifest SET status = 'stored' WHERE chunk_index = 1`)
	check("silent", row{status: runs.Interrupted, published: 2, stored: 2, finished: true, reason: "having published 2 chunks"})
	check("alive", row{status: runs.Running})

	if err := runs.Beat(ctx, db.Pool, "silent", runs.Progress{Documents: 2, Published: 3}); err != nil {
		t.Fatal(err)
	}
	check("silent", row{status: runs.Running, published: 3, stored: 2})
	if err := runs.EndPublishing(ctx, db.Pool, "silent", runs.Progress{Documents: 2, Published: 3}, 0, nil); err != nil {
		t.Fatal(err)
	}
	check("silent", row{status: runs.Completed, published: 3, stored: 2, finished: true})
}
