package deadletter

import (
	"context"
	"fmt"
	"time"
)

// Readiness splits the unresolved dead letters the replayer re-embeds on
// its own (Replayable) by State, as of AsOf, the database's clock; and
// counts the resolved ones.
type Readiness struct {
	AsOf                                  time.Time
	Resolved                              int64
	Ready, BackingOff, Manual, Dispatched int64
	// NextDue is the earliest next_retry_at of those backing off; nil when
	// none is.
	NextDue *time.Time
}

// ReadReadiness reads the Readiness.
func ReadReadiness(ctx context.Context, q Reader) (Readiness, error) {
	var r Readiness
	err := q.QueryRow(ctx, `
		WITH t AS (
			SELECT d.next_retry_at, `+StateSQL()+` AS state
			FROM dead_letters d
			WHERE d.resolved_at IS NULL AND `+ReplayableSQL()+`
		)
		SELECT (SELECT count(*) FROM dead_letters WHERE resolved_at IS NOT NULL),
		       count(*) FILTER (WHERE state = '`+string(StateDispatched)+`'),
		       count(*) FILTER (WHERE state = '`+string(StateReady)+`'),
		       count(*) FILTER (WHERE state = '`+string(StateBackingOff)+`'),
		       count(*) FILTER (WHERE state = '`+string(StateManual)+`'),
		       min(next_retry_at) FILTER (WHERE state = '`+string(StateBackingOff)+`'),
		       now()
		FROM t`).Scan(&r.Resolved, &r.Dispatched, &r.Ready, &r.BackingOff, &r.Manual, &r.NextDue, &r.AsOf)
	if err != nil {
		return r, fmt.Errorf("replay readiness: %w", err)
	}
	r.AsOf, r.NextDue = r.AsOf.UTC(), utcPtr(r.NextDue)
	return r, nil
}
