package manifest

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// RunChunks counts one run's chunks in ingest_manifest by status, now. A
// chunk counts for the run that last published it, so a run whose
// chunks a later run republished counts none of them.
type RunChunks struct {
	Pending, Stored, Parked int64
}

// ChunksByRun counts the chunks of each run of runIDs by status, live:
// the counters ingest_runs keeps are updated in batches and lag the
// manifest. A run absent from the map has no pending, stored or parked
// chunk.
func ChunksByRun(ctx context.Context, q Querier, runIDs []string) (map[string]RunChunks, error) {
	out := make(map[string]RunChunks, len(runIDs))
	if len(runIDs) == 0 {
		return out, nil
	}
	rows, err := q.Query(ctx, `
		SELECT run_id, count(*) FILTER (WHERE status = $2), count(*) FILTER (WHERE status = $3),
		       count(*) FILTER (WHERE status = $4)
		FROM ingest_manifest WHERE run_id = ANY($1) GROUP BY run_id`, runIDs, Pending, Stored, Parked)
	if err != nil {
		return nil, fmt.Errorf("count the chunks of runs: %w", err)
	}
	var id string
	var c RunChunks
	if _, err := pgx.ForEachRow(rows, []any{&id, &c.Pending, &c.Stored, &c.Parked}, func() error {
		out[id] = c
		return nil
	}); err != nil {
		return nil, fmt.Errorf("count the chunks of runs: %w", err)
	}
	return out, nil
}
