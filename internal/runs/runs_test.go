package runs_test

import (
	"context"
	"testing"

	"github.com/sluicehq/sluice/internal/runs"
	"github.com/sluicehq/sluice/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// A run that ended with failures is refreshed again when its parked
// chunks are later stored by a replay, and ends completed.
func TestRefreshCompletesARunOnceItsParkedChunksAreStored(t *testing.T) {
	t.Parallel()
	db := testenv.NewDatabase(t)
	ctx := context.Background()
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := db.Pool.Exec(ctx, q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	exec(`INSERT INTO ingest_runs (run_id, source_id, publish_finished_at) VALUES ('r1', 'src', now())`)
	exec(`INSERT INTO documents (doc_id, source_id, source_native_id, run_id, version, content_hash, chunk_count, status)
	      VALUES ('d1', 'src', 'd1', 'r1', 1, 'h', 2, 'failed')`)
	for i, st := range []string{"stored", "parked"} {
		exec(`INSERT INTO ingest_manifest (doc_id, chunk_index, version, content_hash, status, run_id, job)
		      VALUES ('d1', $1, 1, 'h', $2, 'r1', '\x7b7d')`, i, st)
	}
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
