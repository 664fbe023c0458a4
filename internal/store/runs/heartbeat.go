package runs

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sluicehq/sluice/pkg/messages"
)

// Defaults of a producer's heartbeat.
const (
	// DefaultHeartbeatInterval is how often a producer beats its run's
	// heartbeat.
	DefaultHeartbeatInterval = 5 * time.Second
	// DefaultHeartbeatTimeout is how long a run's producer may stay
	// silent before the run counts as having lost it: six beats, so that
	// a beat or two lost to a slow database is no verdict.
	DefaultHeartbeatTimeout = 30 * time.Second
	// MinHeartbeatBeats is how many beats the timeout must span at least.
	MinHeartbeatBeats = 3
)

// Progress is what a run's producer has done so far.
type Progress struct {
	// Documents is how many documents it has read.
	Documents int
	// Published is how many chunks JetStream has confirmed.
	Published int
}

// Open records a new run of source, whose producer beats at least once
// every timeout; the open counts as its first beat.
func Open(ctx context.Context, pool *pgxpool.Pool, runID, source string, timeout time.Duration) error {
	_, err := pool.Exec(ctx, `
		INSERT INTO ingest_runs (run_id, source_id, heartbeat_at, heartbeat_timeout)
		VALUES ($1, $2, now(), make_interval(secs => $3))`, runID, source, timeout.Seconds())
	if err != nil {
		return fmt.Errorf("record run: %w", err)
	}
	return nil
}

// Beat records that the run's producer is alive, with its progress. A
// run settled as Interrupted while its producer was only silent (its
// database out of reach longer than the timeout) is running again: its
// producer is publishing.
func Beat(ctx context.Context, pool *pgxpool.Pool, runID string, p Progress) error {
	_, err := pool.Exec(ctx, `
		UPDATE ingest_runs SET heartbeat_at = now(), documents = $2, published = $3,
		       status = CASE WHEN status = 'interrupted' THEN 'running' ELSE status END,
		       halted_reason = CASE WHEN status = 'interrupted' THEN NULL ELSE halted_reason END,
		       finished_at = CASE WHEN status = 'interrupted' THEN NULL ELSE finished_at END
		WHERE run_id = $1`, runID, p.Documents, p.Published)
	if err != nil {
		return fmt.Errorf("beat run %s: %w", runID, err)
	}
	return nil
}

// EndPublishing records that the run's producer has finished publishing,
// with its final progress and the documents it parked itself. A run that
// failed (failure is not nil) is Failed, with failure as its reason; a
// halted or cancelled one keeps its status; any other is running until
// Refresh settles it.
func EndPublishing(ctx context.Context, pool *pgxpool.Pool, runID string, p Progress, parked int, failure error) error {
	status := Running
	var reason *string
	if failure != nil {
		status = Failed
		s := messages.TruncateDetail(failure.Error())
		reason = &s
	}
	_, err := pool.Exec(ctx, `
		UPDATE ingest_runs SET documents = $2, published = $3, parked = parked + $4, heartbeat_at = now(),
		       status = CASE WHEN status IN ('halted', 'cancelled') THEN status ELSE $5 END,
		       halted_reason = CASE WHEN status = 'interrupted' THEN $6 ELSE coalesce($6, halted_reason) END,
		       finished_at = CASE WHEN status IN ('halted', 'cancelled') THEN finished_at END,
		       publish_finished_at = now()
		WHERE run_id = $1`, runID, p.Documents, p.Published, parked, status, reason)
	if err != nil {
		return fmt.Errorf("record the end of run %s: %w", runID, err)
	}
	return nil
}
