package runs

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Status is an ingest run's status (ingest_runs.status).
type Status string

// Statuses. A run is Running while its producer publishes or chunks are
// pending, Halted while an operator decides, and ends Completed,
// CompletedWithFailures, Cancelled, Failed, or Interrupted when its
// producer fell silent before it finished publishing (see Settle).
const (
	Running               Status = "running"
	Completed             Status = "completed"
	CompletedWithFailures Status = "completed_with_failures"
	Halted                Status = "halted"
	Cancelled             Status = "cancelled"
	Interrupted           Status = "interrupted"
	Failed                Status = "failed"
)

// ErrNoRun is returned for a run id that ingest_runs does not hold.
var ErrNoRun = errors.New("no such run")

// Get returns a run's status and its halted_reason (empty when none).
// It returns ErrNoRun for an unknown run.
func Get(ctx context.Context, pool *pgxpool.Pool, runID string) (Status, string, error) {
	var st Status
	var reason *string
	err := pool.QueryRow(ctx, `SELECT status, halted_reason FROM ingest_runs WHERE run_id = $1`, runID).Scan(&st, &reason)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", "", fmt.Errorf("run %q: %w", runID, ErrNoRun)
	}
	if err != nil {
		return "", "", fmt.Errorf("read run %s: %w", runID, err)
	}
	if reason == nil {
		return st, "", nil
	}
	return st, *reason, nil
}
