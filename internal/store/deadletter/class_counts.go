package deadletter

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// ClassCount counts one source's dead letters of one error class.
type ClassCount struct {
	Source, Class string
	// All counts them; Open those not resolved; WorstAttempts is the
	// most attempts any of them took.
	All, Open, WorstAttempts int
}

// CountByClass counts the dead letters that last failed in [since,
// until), by source and error class.
func CountByClass(ctx context.Context, q Reader, since, until time.Time) ([]ClassCount, error) {
	rows, err := q.Query(ctx, `
		SELECT source_id, error_class, count(*), count(*) FILTER (WHERE resolved_at IS NULL), max(attempts)
		FROM dead_letters WHERE last_failed_at >= $1 AND last_failed_at < $2
		GROUP BY source_id, error_class`, since, until)
	if err != nil {
		return nil, fmt.Errorf("dead letters by class: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (ClassCount, error) {
		var c ClassCount
		err := r.Scan(&c.Source, &c.Class, &c.All, &c.Open, &c.WorstAttempts)
		return c, err
	})
	if err != nil {
		return nil, fmt.Errorf("dead letters by class: %w", err)
	}
	return out, nil
}
