package runs_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/sluicehq/sluice/internal/dev/testenv"
	"github.com/sluicehq/sluice/internal/store/runs"
)

// List returns the newest runs first, runs started in the same instant
// by run id descending, each as ingest_runs records it; it keeps to a
// source, to running runs and to its limit, and Read returns one run as
// List does, or ErrNoRun.
func TestListReturnsTheNewestRunsFirst(t *testing.T) {
	t.Parallel()
	db := testenv.NewDatabase(t)
	ctx := context.Background()
	exec := execer(t, db)
	exec(`INSERT INTO ingest_runs (run_id, source_id, started_at, finished_at, status, documents, published, stored, parked, halted_reason)
	      VALUES ('old', 'a', '2020-01-01', '2020-01-01 01:00', 'completed_with_failures', 3, 5, 4, 1, NULL),
	             ('tie-1', 'a', '2020-01-02', NULL, 'running', 1, 1, 0, 0, NULL),
	             ('tie-2', 'b', '2020-01-02', '2020-01-02 00:10', 'halted', 2, 2, 1, 1, 'too many parked'),
	             ('new', 'b', '2020-01-03', NULL, 'running', 0, 0, 0, 0, NULL)`)
	ids := func(f runs.Filter) []string {
		t.Helper()
		list, err := runs.List(ctx, db.Pool, f)
		if err != nil {
			t.Fatal(err)
		}
		if list == nil {
			t.Errorf("List(%+v) = nil, want an empty slice at least", f)
		}
		var out []string
		for _, r := range list {
			out = append(out, r.RunID)
		}
		return out
	}
	for _, tt := range []struct {
		f    runs.Filter
		want []string
	}{
		{runs.Filter{Limit: 10}, []string{"new", "tie-2", "tie-1", "old"}},
		{runs.Filter{Limit: 2}, []string{"new", "tie-2"}},
		{runs.Filter{Source: "a", Limit: 10}, []string{"tie-1", "old"}},
		{runs.Filter{Running: true, Limit: 10}, []string{"new", "tie-1"}},
		{runs.Filter{Source: "b", Running: true, Limit: 10}, []string{"new"}},
		{runs.Filter{Source: "none", Limit: 10}, nil},
	} {
		if got := ids(tt.f); !slices.Equal(got, tt.want) {
			t.Errorf("List(%+v) = %q, want %q", tt.f, got, tt.want)
		}
	}
	r, err := runs.Read(ctx, db.Pool, "tie-2")
	if err != nil {
		t.Fatal(err)
	}
	if r.SourceID != "b" || r.Status != runs.Halted || r.Documents != 2 || r.Published != 2 || r.Stored != 1 || r.Parked != 1 ||
		r.HaltedReason == nil || *r.HaltedReason != "too many parked" || r.FinishedAt == nil || r.StartedAt.IsZero() {
		t.Errorf("Read(tie-2) = %+v", r)
	}
	if r, err := runs.Read(ctx, db.Pool, "new"); err != nil || r.FinishedAt != nil || r.HaltedReason != nil || r.Status != runs.Running {
		t.Errorf("Read(new) = %+v, %v; want a running run, not finished, without a reason", r, err)
	}
	if _, err := runs.Read(ctx, db.Pool, "nope"); !errors.Is(err, runs.ErrNoRun) {
		t.Errorf("Read(nope): %v, want ErrNoRun", err)
	}
}
