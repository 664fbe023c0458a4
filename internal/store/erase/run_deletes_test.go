package erase_test

import (
	"context"
	"slices"
	"testing"

	"github.com/sluicehq/sluice/internal/dev/testenv"
	"github.com/sluicehq/sluice/internal/store/erase"
)

// DeletesByRun counts the documents each run deleted, over all of its
// requests, and names the first of them by source id in order; a run
// that deleted nothing, or whose request was a dry run, has none, and a
// delete without a run counts for no run.
func TestDeletesByRunCountsAndNamesEachRunsDeletes(t *testing.T) {
	t.Parallel()
	db := testenv.NewDatabase(t)
	ctx := context.Background()
	// Run a deleted five documents over two requests, run b one; the
	// request without a run deleted one, the dry run none.
	if _, err := db.Pool.Exec(ctx, `
		WITH q AS (
			INSERT INTO deletion_requests (request_id, requested_by, reason, source_id, run_id, dry_run, selected)
			VALUES ('q1', 'sync', 'gone at the source', 'src', 'run-a', false, 3),
			       ('q2', 'sync', 'gone at the source', 'src', 'run-a', false, 2),
			       ('q3', 'sync', 'gone at the source', 'src', 'run-b', false, 1),
			       ('q4', 'cli:alice', 'asked', 'src', NULL, false, 1),
			       ('q5', 'sync', 'gone at the source', 'src', 'run-dry', true, 1)
			RETURNING request_id
		)
		INSERT INTO document_deletions (request_id, doc_id, source_id, source_native_id, version, vectors, text_rows, jobs, payloads, dead_letters)
		SELECT d.request_id, 'doc-' || d.native, 'src', d.native, 2, 0, 0, 0, 0, 0
		FROM (VALUES ('q1', 'd.txt'), ('q1', 'a.txt'), ('q1', 'c.txt'), ('q2', 'e.txt'), ('q2', 'b.txt'), ('q3', 'z.txt'), ('q4', 'n.txt'))
		     AS d(request_id, native)
		JOIN q USING (request_id)`); err != nil {
		t.Fatal(err)
	}
	got, err := erase.DeletesByRun(ctx, db.Pool, []string{"run-a", "run-b", "run-dry", "run-none"}, 3)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]erase.RunDeletes{
		"run-a":    {Count: 5, NativeIDs: []string{"a.txt", "b.txt", "c.txt"}},
		"run-b":    {Count: 1, NativeIDs: []string{"z.txt"}},
		"run-dry":  {},
		"run-none": {},
	}
	if len(got) != len(want) {
		t.Errorf("DeletesByRun = %+v, want an entry for each of %d runs", got, len(want))
	}
	for run, w := range want {
		if g, ok := got[run]; !ok || g.Count != w.Count || !slices.Equal(g.NativeIDs, w.NativeIDs) {
			t.Errorf("%s: %+v (listed %v), want %+v", run, g, ok, w)
		}
	}
}
