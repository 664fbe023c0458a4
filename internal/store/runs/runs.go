package runs

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sluicehq/sluice/internal/store/manifest"
)

// Refresh settles every open run (see Settle), and recounts every run
// that ended with failures or was interrupted: a parked chunk stored
// later by a replay turns completed_with_failures into completed. A run
// whose producer was killed ends interrupted once its heartbeat is older
// than its timeout and none of its chunks is pending, with no operator
// action. It is idempotent and cheap enough to call every few seconds;
// a run that an operator, a heartbeat or its producer changed meanwhile
// is left for the next call.
func Refresh(ctx context.Context, pool *pgxpool.Pool) error {
	rows, err := pool.Query(ctx, `
		SELECT r.run_id, r.status, r.publish_finished_at IS NOT NULL, r.heartbeat_at,
		       coalesce(extract(epoch FROM r.heartbeat_timeout)::float8, $4), now(), r.published,
		       r.stored, r.parked, r.finished_at IS NOT NULL,
		       count(m.doc_id) FILTER (WHERE m.status = $1),
		       count(m.doc_id) FILTER (WHERE m.status = $2),
		       count(m.doc_id) FILTER (WHERE m.status = $3)
		FROM ingest_runs r LEFT JOIN ingest_manifest m ON m.run_id = r.run_id
		WHERE r.finished_at IS NULL OR r.status IN ('running', 'completed_with_failures', 'interrupted')
		GROUP BY r.run_id`, manifest.Stored, manifest.Parked, manifest.Pending, DefaultHeartbeatTimeout.Seconds())
	if err != nil {
		return fmt.Errorf("refresh runs: %w", err)
	}
	var u settled
	var o observed
	var timeout float64
	if _, err := pgx.ForEachRow(rows, []any{&o.runID, &o.facts.Status, &o.facts.PublishFinished, &o.lastBeat,
		&timeout, &o.facts.Now, &o.facts.Published, &o.stored, &o.parked, &o.ended,
		&o.nowStored, &o.facts.Parked, &o.facts.Pending}, func() error {
		o.facts.HeartbeatTimeout = time.Duration(timeout * float64(time.Second))
		o.facts.LastBeat = time.Time{}
		if o.lastBeat != nil {
			o.facts.LastBeat = *o.lastBeat
		}
		u.add(o, Settle(o.facts))
		return nil
	}); err != nil {
		return fmt.Errorf("refresh runs: %w", err)
	}
	if len(u.runIDs) == 0 {
		return nil
	}
	// A run is written only as it was read: a status an operator or its
	// producer changed, or a heartbeat that arrived meanwhile, wins.
	_, err = pool.Exec(ctx, `
		UPDATE ingest_runs r
		SET status = u.status, stored = u.stored, parked = u.parked,
		    halted_reason = coalesce(u.reason, r.halted_reason),
		    finished_at = CASE WHEN u.ended THEN coalesce(r.finished_at, now()) END
		FROM unnest($1::text[], $2::text[], $3::timestamptz[], $4::text[], $5::int[], $6::int[], $7::bool[], $8::text[])
		     AS u(run_id, was, beat, status, stored, parked, ended, reason)
		WHERE r.run_id = u.run_id AND r.status = u.was AND r.heartbeat_at IS NOT DISTINCT FROM u.beat`,
		u.runIDs, u.was, u.beats, u.statuses, u.stored, u.parked, u.ended, u.reasons)
	if err != nil {
		return fmt.Errorf("refresh runs: %w", err)
	}
	return nil
}

// observed is one run as Refresh reads it.
type observed struct {
	runID          string
	facts          Facts
	lastBeat       *time.Time
	stored, parked int
	ended          bool
	nowStored      int
}

// settled are the runs whose row Refresh changes, column by column.
type settled struct {
	runIDs, was, statuses []string
	beats                 []*time.Time
	stored, parked        []int
	ended                 []bool
	reasons               []*string
}

// add keeps s's settlement of o when it changes anything.
func (u *settled) add(o observed, s Settlement) {
	if s.Status == o.facts.Status && s.Ended == o.ended && o.nowStored == o.stored && o.facts.Parked == o.parked {
		return
	}
	u.runIDs = append(u.runIDs, o.runID)
	u.was = append(u.was, string(o.facts.Status))
	var beat *time.Time
	if o.lastBeat != nil {
		b := *o.lastBeat
		beat = &b
	}
	u.beats = append(u.beats, beat)
	u.statuses = append(u.statuses, string(s.Status))
	u.stored = append(u.stored, o.nowStored)
	u.parked = append(u.parked, o.facts.Parked)
	u.ended = append(u.ended, s.Ended)
	var reason *string
	if s.Reason != "" {
		reason = &s.Reason
	}
	u.reasons = append(u.reasons, reason)
}
