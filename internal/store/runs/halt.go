package runs

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sluicehq/sluice/internal/store/manifest"
)

// Threshold is when a run halts: once at least MinChunks of its chunks
// have settled (stored or parked), and the parked share of them exceeds
// RejectionRatio. A RejectionRatio of 0 never halts.
type Threshold struct {
	RejectionRatio float64
	MinChunks      int
}

// RejectionRatio is a run's rejection: the share of its settled chunks
// (stored or parked) that were parked, from 0 to 1; 0 while none has
// settled. It is the ratio a Threshold judges, and the one the console
// shows.
func RejectionRatio(stored, parked int) float64 {
	if stored+parked <= 0 {
		return 0
	}
	return float64(parked) / float64(stored+parked)
}

// Verdict decides whether a run with stored and parked settled chunks
// crosses t, and says why in words an operator can act on.
func (t Threshold) Verdict(stored, parked int) (halt bool, reason string) {
	settled := stored + parked
	if t.RejectionRatio <= 0 || settled < max(t.MinChunks, 1) {
		return false, ""
	}
	ratio := RejectionRatio(stored, parked)
	if ratio <= t.RejectionRatio {
		return false, ""
	}
	return true, fmt.Sprintf("rejection ratio %.2f (%d of %d settled chunks parked) crossed the threshold %.2f",
		ratio, parked, settled, t.RejectionRatio)
}

// Judge counts a running run's settled chunks and halts it when they
// cross t. A run already halted, ended, or resumed by an operator (who
// has accepted its ratio) is left alone. It reports whether this call
// halted the run, with the reason recorded.
func Judge(ctx context.Context, pool *pgxpool.Pool, runID string, t Threshold) (bool, string, error) {
	if t.RejectionRatio <= 0 {
		return false, "", nil
	}
	var eligible bool
	var stored, parked int
	err := pool.QueryRow(ctx, `
		SELECT r.status = 'running' AND r.resumed_at IS NULL,
		       (SELECT count(*) FROM ingest_manifest WHERE run_id = r.run_id AND status = $2),
		       (SELECT count(*) FROM ingest_manifest WHERE run_id = r.run_id AND status = $3)
		FROM ingest_runs r WHERE r.run_id = $1`, runID, manifest.Stored, manifest.Parked).Scan(&eligible, &stored, &parked)
	if err != nil {
		return false, "", fmt.Errorf("judge run %s: %w", runID, err)
	}
	halt, reason := t.Verdict(stored, parked)
	if !eligible || !halt {
		return false, "", nil
	}
	tag, err := pool.Exec(ctx, `
		UPDATE ingest_runs SET status = 'halted', halted_reason = $2, halted_at = now()
		WHERE run_id = $1 AND status = 'running' AND resumed_at IS NULL`, runID, reason)
	if err != nil {
		return false, "", fmt.Errorf("halt run %s: %w", runID, err)
	}
	return tag.RowsAffected() == 1, reason, nil
}

// ErrNotHalted is returned when resuming a run that is not halted.
var ErrNotHalted = errors.New("run is not halted")

// ErrEnded is returned when cancelling a run that has already ended.
var ErrEnded = errors.New("run has already ended")

// Resume lets a halted run go on: consumers release its held jobs on
// their next delivery, and its rejection ratio is no longer judged. It
// returns ErrNoRun or ErrNotHalted when there is nothing to resume.
func Resume(ctx context.Context, pool *pgxpool.Pool, runID string) error {
	return transition(ctx, pool, runID, "resume", ErrNotHalted, `
		UPDATE ingest_runs SET status = 'running', resumed_at = now(), halted_reason = NULL, finished_at = NULL
		WHERE run_id = $1 AND status = 'halted'`)
}

// Cancel ends a running or halted run: consumers park each of its chunks
// still owed as run_cancelled, with reason, through the normal parking
// path, so that each becomes a dead letter an operator can replay. It
// returns ErrNoRun or ErrEnded when there is nothing to cancel.
func Cancel(ctx context.Context, pool *pgxpool.Pool, runID, reason string) error {
	if strings.TrimSpace(reason) == "" {
		return errors.New("cancel needs a reason: say why, for the dead letters and the audit trail")
	}
	return transition(ctx, pool, runID, "cancel", ErrEnded, `
		UPDATE ingest_runs SET status = 'cancelled', halted_reason = $2
		WHERE run_id = $1 AND status IN ('running', 'halted')`, "cancelled: "+reason)
}

// transition runs an operator's status change, which update makes only
// from the states it applies to; otherwise it names the run's status and
// wraps refused (or ErrNoRun).
func transition(ctx context.Context, pool *pgxpool.Pool, runID, action string, refused error, update string, args ...any) error {
	tag, err := pool.Exec(ctx, update, append([]any{runID}, args...)...)
	if err != nil {
		return fmt.Errorf("%s run %s: %w", action, runID, err)
	}
	if tag.RowsAffected() == 1 {
		return nil
	}
	st, _, err := Get(ctx, pool, runID)
	if err != nil {
		return err
	}
	return fmt.Errorf("run %s is %s: %w", runID, st, refused)
}
