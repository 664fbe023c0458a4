package erase

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/sluicehq/sluice/internal/store/manifest"
)

// RunDeletes is what one run deleted, as the audit records it: a sync
// run deletes the documents gone at the source.
type RunDeletes struct {
	// Count is how many documents the run deleted.
	Count int64
	// NativeIDs are the first of their source_native_ids, in order, as
	// many as DeletesByRun was asked to name.
	NativeIDs []string
}

// DeletesByRun returns, for each run of runIDs, how many documents it
// deleted and the first shown of their source_native_ids in order, so
// that a listing of runs can name a few without reading them all. The
// map holds every run of runIDs; one that deleted nothing has a zero
// Count and no NativeIDs.
func DeletesByRun(ctx context.Context, q manifest.Querier, runIDs []string, shown int) (map[string]RunDeletes, error) {
	out := make(map[string]RunDeletes, len(runIDs))
	if len(runIDs) == 0 {
		return out, nil
	}
	rows, err := q.Query(ctx, `
		SELECT r.run_id,
		       (SELECT count(*) FROM document_deletions x JOIN deletion_requests q USING (request_id) WHERE q.run_id = r.run_id),
		       ARRAY(SELECT x.source_native_id FROM document_deletions x JOIN deletion_requests q USING (request_id)
		             WHERE q.run_id = r.run_id ORDER BY x.source_native_id LIMIT $2)
		FROM unnest($1::text[]) AS r(run_id)`, runIDs, shown)
	if err != nil {
		return nil, fmt.Errorf("read the deletes of runs: %w", err)
	}
	var id string
	var d RunDeletes
	if _, err := pgx.ForEachRow(rows, []any{&id, &d.Count, &d.NativeIDs}, func() error {
		out[id] = d
		return nil
	}); err != nil {
		return nil, fmt.Errorf("read the deletes of runs: %w", err)
	}
	return out, nil
}
