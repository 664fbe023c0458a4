package reconcile_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/dev/testenv"
	"github.com/sluicehq/sluice/internal/ops/reconcile"
	"github.com/sluicehq/sluice/internal/platform/broker"
	"github.com/sluicehq/sluice/internal/store/runs"
)

// A completed run whose files do not add up to those read, parked and
// excluded met a file and did nothing visible with it: reconcile reports
// it, and cannot repair it. A run interrupted before it got to its files
// is not held to them.
func TestReconcileReportsACompletedRunWithAFileUnaccounted(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testenv.NewDatabase(t)
	_, js := testenv.NewJetStream(t, broker.Topology{})
	run := func(id string, f runs.Files, failure error) {
		t.Helper()
		if err := runs.Open(ctx, db.Pool, id, "docs", time.Minute); err != nil {
			t.Fatal(err)
		}
		if err := runs.RecordFiles(ctx, db.Pool, id, f); err != nil {
			t.Fatal(err)
		}
		if err := runs.EndPublishing(ctx, db.Pool, id, runs.Progress{}, 0, failure); err != nil {
			t.Fatal(err)
		}
	}
	run("adds-up", runs.Files{Seen: 4, Read: 1, Parked: 1, Excluded: map[string]int{"hidden": 1, "exclude_glob": 1}}, nil)
	run("failed-early", runs.Files{Seen: 4, Read: 1}, context.Canceled)
	run("drops-one", runs.Files{Seen: 4, Read: 1, Parked: 1, Excluded: map[string]int{"hidden": 1}}, nil)
	if err := runs.Refresh(ctx, db.Pool); err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]runs.Status{"adds-up": runs.Completed, "failed-early": runs.Failed, "drops-one": runs.Completed} {
		if st, _, err := runs.Get(ctx, db.Pool, id); err != nil || st != want {
			t.Fatalf("run %s is %s (%v), want %s", id, st, err, want)
		}
	}
	rep, err := reconcile.Run(ctx, db.Pool, js, reconcile.Config{Redrive: true})
	if err != nil {
		t.Fatal(err)
	}
	if rep.OK || !slices.Equal(rep.UnaccountedRuns, []string{"drops-one"}) {
		t.Fatalf("ok %v, runs with files unaccounted %v; want only drops-one, and not repairable", rep.OK, rep.UnaccountedRuns)
	}
	if named := rep.Named(); !slices.Contains(named, "1 completed runs with files unaccounted for") {
		t.Errorf("problems named %v, want the run counted", named)
	}
}
