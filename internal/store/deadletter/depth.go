package deadletter

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Depth is one group of the unresolved dead letters: of one disposition
// and error class, or (BySource) of one source. The counts by state are
// disjoint: Ready counts only those the replayer re-embeds on its own
// (Replayable), the others every dead letter of their State.
type Depth struct {
	BySource                              bool
	Disposition, ErrorClass, Source       string
	N                                     int64
	Ready, BackingOff, Manual, Dispatched int64
	Escalated, Quarantined                int64
	// Worst is the most attempts any of them took.
	Worst int64
	// NextDue is the earliest next_retry_at of those backing off.
	NextDue *time.Time
}

// ReadDepth reads the unresolved dead letters by disposition and error
// class and by source, in one pass over the table (grouping sets), the
// largest group first, and the database's clock.
func ReadDepth(ctx context.Context, q Reader) ([]Depth, time.Time, error) {
	rows, err := q.Query(ctx, `
		WITH t AS (
			SELECT d.disposition, d.error_class, d.source_id, d.next_retry_at, d.attempts,
			       `+ReplayableSQL()+` AS replayable, `+StateSQL()+` AS state
			FROM dead_letters d WHERE d.resolved_at IS NULL)
		SELECT grouping(source_id) = 1, coalesce(disposition, ''), coalesce(error_class, ''), coalesce(source_id, ''), count(*),
		       count(*) FILTER (WHERE replayable AND state = '`+string(StateReady)+`'),
		       count(*) FILTER (WHERE state = '`+string(StateBackingOff)+`'),
		       count(*) FILTER (WHERE state = '`+string(StateManual)+`'),
		       count(*) FILTER (WHERE state = '`+string(StateDispatched)+`'),
		       count(*) FILTER (WHERE disposition = 'escalate'),
		       count(*) FILTER (WHERE disposition = 'quarantine'),
		       min(next_retry_at) FILTER (WHERE state = '`+string(StateBackingOff)+`'),
		       max(attempts), now()
		FROM t GROUP BY GROUPING SETS ((disposition, error_class), (source_id))
		ORDER BY 5 DESC, 2, 3, 4`)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("dead-letter depth: %w", err)
	}
	var out []Depth
	var d Depth
	var byClass bool
	var asOf time.Time
	_, err = pgx.ForEachRow(rows, []any{&byClass, &d.Disposition, &d.ErrorClass, &d.Source, &d.N, &d.Ready, &d.BackingOff,
		&d.Manual, &d.Dispatched, &d.Escalated, &d.Quarantined, &d.NextDue, &d.Worst, &asOf}, func() error {
		d.BySource = !byClass
		out = append(out, d)
		d = Depth{}
		return nil
	})
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("dead-letter depth: %w", err)
	}
	return out, asOf, nil
}
