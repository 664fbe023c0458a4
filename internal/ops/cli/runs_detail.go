package cli

import (
	"context"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sluicehq/sluice/internal/store/deadletter"
	"github.com/sluicehq/sluice/internal/store/runs"
)

// readRunDetails adds to each run what its summary line does not show:
// its escalations and the files it recorded.
func readRunDetails(ctx context.Context, pool *pgxpool.Pool, list []runRow) error {
	ids := make([]string, len(list))
	for i, r := range list {
		ids[i] = r.RunID
	}
	escalated, err := deadletter.EscalatedByRun(ctx, pool, ids)
	if err != nil {
		return err
	}
	for i := range list {
		list[i].Escalated = escalated[list[i].RunID]
		if list[i].Files, err = runs.ReadFiles(ctx, pool, list[i].RunID); err != nil {
			return err
		}
	}
	return nil
}
