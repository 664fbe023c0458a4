package deadletter

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sluicehq/sluice/pkg/classify"
)

// ClassStats are the unresolved dead letters of one error class and
// disposition. Times are UTC.
type ClassStats struct {
	ErrorClass, Disposition string
	Count                   int64
	// Oldest is the earliest first failure, Newest the latest last one.
	Oldest, Newest *time.Time
	// Attempts sums their attempts; Worst is the most any of them took.
	Attempts, Worst int64
}

// OpenByClass reads the unresolved dead letters by error class and
// disposition, the largest group first.
func OpenByClass(ctx context.Context, q Reader) ([]ClassStats, error) {
	rows, err := q.Query(ctx, `
		SELECT error_class, disposition, count(*), min(first_failed_at), max(last_failed_at), sum(attempts), max(attempts)
		FROM dead_letters
		WHERE resolved_at IS NULL
		GROUP BY error_class, disposition
		ORDER BY count(*) DESC, error_class, disposition`)
	if err != nil {
		return nil, fmt.Errorf("dead letter stats: %w", err)
	}
	stats, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (ClassStats, error) {
		var s ClassStats
		err := r.Scan(&s.ErrorClass, &s.Disposition, &s.Count, &s.Oldest, &s.Newest, &s.Attempts, &s.Worst)
		s.Oldest, s.Newest = utcPtr(s.Oldest), utcPtr(s.Newest)
		return s, err
	})
	if err != nil {
		return nil, fmt.Errorf("dead letter stats: %w", err)
	}
	return stats, nil
}

// RunClass is the unresolved dead letters of one run, disposition and
// error class; Worst is the most attempts any of them took.
type RunClass struct {
	Disposition, ErrorClass string
	N, Worst                int64
}

// OpenOfRun reads the unresolved dead letters of run runID by
// disposition and error class, the largest group first.
func OpenOfRun(ctx context.Context, q Reader, runID string) ([]RunClass, error) {
	rows, err := q.Query(ctx, `
		SELECT disposition, error_class, count(*), max(attempts) FROM dead_letters
		WHERE run_id = $1 AND resolved_at IS NULL GROUP BY 1, 2 ORDER BY 3 DESC, 1, 2`, runID)
	if err != nil {
		return nil, fmt.Errorf("run dead letters: %w", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[RunClass])
	if err != nil {
		return nil, fmt.Errorf("run dead letters: %w", err)
	}
	return out, nil
}

// OpenByRun counts the unresolved dead letters of each run of runIDs; a
// run absent from the map has none.
func OpenByRun(ctx context.Context, q Reader, runIDs []string) (map[string]int64, error) {
	out := make(map[string]int64, len(runIDs))
	if len(runIDs) == 0 {
		return out, nil
	}
	rows, err := q.Query(ctx, `
		SELECT run_id, count(*) FROM dead_letters WHERE run_id = ANY($1) AND resolved_at IS NULL GROUP BY run_id`, runIDs)
	if err != nil {
		return nil, fmt.Errorf("run dead letters: %w", err)
	}
	var id string
	var n int64
	if _, err := pgx.ForEachRow(rows, []any{&id, &n}, func() error {
		out[id] = n
		return nil
	}); err != nil {
		return nil, fmt.Errorf("run dead letters: %w", err)
	}
	return out, nil
}

// EscalatedByRun counts the escalated dead letters of each run of runIDs,
// resolved or not: the chunks a run held back for a secret or a
// compliance rule. A run absent from the map has none.
func EscalatedByRun(ctx context.Context, q Reader, runIDs []string) (map[string]int64, error) {
	out := make(map[string]int64, len(runIDs))
	if len(runIDs) == 0 {
		return out, nil
	}
	rows, err := q.Query(ctx, `
		SELECT run_id, count(*) FROM dead_letters WHERE run_id = ANY($1) AND disposition = $2 GROUP BY run_id`,
		runIDs, string(classify.Escalate))
	if err != nil {
		return nil, fmt.Errorf("run escalations: %w", err)
	}
	var id string
	var n int64
	if _, err := pgx.ForEachRow(rows, []any{&id, &n}, func() error {
		out[id] = n
		return nil
	}); err != nil {
		return nil, fmt.Errorf("run escalations: %w", err)
	}
	return out, nil
}
