package deadletter

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Arrival is how many failures of one error class triage recorded in
// one hour: Bucket counts the hours since the window's start.
type Arrival struct {
	Bucket int
	Class  string
	N      int
}

// Arrivals reads, from dead_letter_history, the failures recorded in
// [start, end) by hour and error class.
func Arrivals(ctx context.Context, q Reader, start, end time.Time) ([]Arrival, error) {
	rows, err := q.Query(ctx, `
		SELECT floor(extract(epoch FROM at - $1) / 3600)::int, error_class, count(*)
		FROM dead_letter_history WHERE event = 'failed' AND at >= $1 AND at < $2
		GROUP BY 1, 2`, start, end)
	if err != nil {
		return nil, fmt.Errorf("arrivals: %w", err)
	}
	cells, err := pgx.CollectRows(rows, pgx.RowToStructByPos[Arrival])
	if err != nil {
		return nil, fmt.Errorf("arrivals: %w", err)
	}
	return cells, nil
}
