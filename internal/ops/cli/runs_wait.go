package cli

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sluicehq/sluice/internal/platform/wait"
	"github.com/sluicehq/sluice/internal/store/runs"
)

// runsPoll is how often `sluice runs --wait` looks again.
const runsPoll = 250 * time.Millisecond

// errUnsettled is a `sluice runs --wait` that ran out of time.
var errUnsettled = errors.New("runs still in progress")

// settled reports whether a run has ended and none of its chunks is
// pending: what a user waits for before searching what it ingested.
func settled(r runRow) bool {
	return r.Status != string(runs.Running) && r.Manifest.Pending == 0
}

// awaitSettled lists the runs again until every one has settled or d
// passes; it returns the last list, and an error wrapping errUnsettled
// when time ran out.
func awaitSettled(ctx context.Context, pool *pgxpool.Pool, source string, limit int, d time.Duration, list []runRow) ([]runRow, error) {
	deadline := time.Now().Add(d)
	for {
		pending := 0
		for _, r := range list {
			if !settled(r) {
				pending++
			}
		}
		if pending == 0 {
			return list, nil
		}
		if time.Now().After(deadline) {
			return list, fmt.Errorf("%w: %d of them after %s (the consumers embed in the background: see their logs, or `sluice dlq stats`)", errUnsettled, pending, d)
		}
		if !wait.Sleep(ctx, runsPoll, nil) {
			return list, ctx.Err()
		}
		var err error
		if list, err = listRuns(ctx, pool, source, limit); err != nil {
			return list, err
		}
	}
}
