package cli

import (
	"context"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sluicehq/sluice/internal/store/deadletter"
	"github.com/sluicehq/sluice/internal/store/manifest"
	"github.com/sluicehq/sluice/internal/store/runs"
)

// readRunDetails adds to each run what runs.List does not read: its
// chunks counted live in the manifest, its escalations and the files it
// recorded.
func readRunDetails(ctx context.Context, pool *pgxpool.Pool, list []runRow) error {
	ids := make([]string, len(list))
	for i, r := range list {
		ids[i] = r.RunID
	}
	chunks, err := manifest.ChunksByRun(ctx, pool, ids)
	if err != nil {
		return err
	}
	escalated, err := deadletter.EscalatedByRun(ctx, pool, ids)
	if err != nil {
		return err
	}
	for i := range list {
		list[i].Manifest = manifestCounts(chunks[list[i].RunID])
		list[i].Escalated = escalated[list[i].RunID]
		if list[i].Files, err = runs.ReadFiles(ctx, pool, list[i].RunID); err != nil {
			return err
		}
	}
	return nil
}
