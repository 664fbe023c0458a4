package runs

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Run is one run as ingest_runs records it, for the listings of the CLI
// and the console. Stored and Parked are the counters the run recorded,
// which Refresh updates in batches and which may lag the manifest: a
// listing that needs them live counts the run's chunks with
// manifest.ChunksByRun.
type Run struct {
	RunID, SourceID string
	Status          Status
	StartedAt       time.Time
	FinishedAt      *time.Time
	// HeartbeatAt is when the run's producer was last heard from: a run
	// whose producer fell silent for longer than its timeout ends
	// interrupted once its chunks have settled.
	HeartbeatAt                          *time.Time
	Documents, Published, Stored, Parked int
	// HaltedReason is why the run halted, was cancelled, failed or was
	// interrupted; nil when none was recorded.
	HaltedReason *string
}

// Filter selects the runs List returns.
type Filter struct {
	// Source is the source_id whose runs are listed; empty lists every
	// source's.
	Source string
	// Running lists only the runs whose status is Running.
	Running bool
	// Limit is how many runs at the most, the newest first.
	Limit int
}

// runColumns are the columns of ingest_runs a Run holds, in scanRun's
// order.
const runColumns = `
	SELECT run_id, source_id, status, started_at, finished_at, heartbeat_at, documents, published, stored, parked, halted_reason
	FROM ingest_runs`

// scanRun scans one row of runColumns.
func scanRun(row pgx.CollectableRow) (Run, error) {
	var r Run
	err := row.Scan(&r.RunID, &r.SourceID, &r.Status, &r.StartedAt, &r.FinishedAt, &r.HeartbeatAt,
		&r.Documents, &r.Published, &r.Stored, &r.Parked, &r.HaltedReason)
	return r, err
}

// List returns the newest runs that f selects, ordered by started_at
// and then run_id, both descending, so that runs started in the same
// instant list in one order every time. It returns an empty slice, not
// nil, when there is none.
func List(ctx context.Context, pool *pgxpool.Pool, f Filter) ([]Run, error) {
	rows, err := pool.Query(ctx, runColumns+`
		WHERE ($1 = '' OR source_id = $1) AND (NOT $2 OR status = $3)
		ORDER BY started_at DESC, run_id DESC LIMIT $4`, f.Source, f.Running, Running, f.Limit)
	if err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	list, err := pgx.CollectRows(rows, scanRun)
	if err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	if list == nil {
		list = []Run{}
	}
	return list, nil
}

// Read returns run runID, as List would list it. It returns ErrNoRun for
// an unknown run.
func Read(ctx context.Context, pool *pgxpool.Pool, runID string) (Run, error) {
	rows, err := pool.Query(ctx, runColumns+` WHERE run_id = $1`, runID)
	if err != nil {
		return Run{}, fmt.Errorf("read run %s: %w", runID, err)
	}
	r, err := pgx.CollectExactlyOneRow(rows, scanRun)
	if errors.Is(err, pgx.ErrNoRows) {
		return Run{}, fmt.Errorf("run %q: %w", runID, ErrNoRun)
	}
	if err != nil {
		return Run{}, fmt.Errorf("read run %s: %w", runID, err)
	}
	return r, nil
}
