package console

import (
	"context"
	"fmt"
	"html/template"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sluicehq/sluice/internal/shape"
)

// shapeWindow is the window the overview reads the DLQ's shape over, the
// default of `sluice dlq report`.
const shapeWindow = 24 * time.Hour

// overview is what the overview page shows.
type overview struct {
	AsOf          time.Time
	Unresolved    int64
	ByDisposition []count
	ByClass       []classCount
	BySource      []sourceCount
	Readiness     readiness
	Shape         shape.Verdict
	ShapeExamples []example
	Chart         template.HTML
	Running       []runRow
}

// count is a labelled number.
type count struct {
	Key string
	N   int64
}

// classCount is unresolved dead letters of one class and disposition.
type classCount struct {
	Disposition, ErrorClass string
	N                       int64
}

// sourceCount is unresolved dead letters of one source.
type sourceCount struct {
	Source     string
	N, Ready   int64
	Escalated  int64
	Quarantine int64
}

// readiness splits unresolved dead letters by what replay can do now.
type readiness struct {
	Ready, BackingOff, Manual, Dispatched int64
	NextDue                               *time.Time
}

// example names one dead letter behind the shape verdict.
type example struct {
	ID, Source, ErrorClass string
}

func readOverview(ctx context.Context, pool *pgxpool.Pool) (*overview, error) {
	o := &overview{}
	rows, err := pool.Query(ctx, `
		SELECT disposition, error_class, count(*) FROM dead_letters
		WHERE resolved_at IS NULL GROUP BY 1, 2 ORDER BY 3 DESC, 1, 2`)
	if err != nil {
		return nil, fmt.Errorf("depth by class: %w", err)
	}
	if o.ByClass, err = pgx.CollectRows(rows, pgx.RowToStructByPos[classCount]); err != nil {
		return nil, fmt.Errorf("depth by class: %w", err)
	}
	byDisp := map[string]int64{}
	for _, c := range o.ByClass {
		o.Unresolved += c.N
		byDisp[c.Disposition] += c.N
	}
	for _, d := range []string{"retry", "quarantine", "ambiguous", "escalate"} {
		o.ByDisposition = append(o.ByDisposition, count{d, byDisp[d]})
	}
	rows, err = pool.Query(ctx, `
		SELECT source_id, count(*),
		       count(*) FILTER (WHERE (replayed_at IS NULL OR replayed_at < last_failed_at) AND next_retry_at <= now()),
		       count(*) FILTER (WHERE disposition = 'escalate'),
		       count(*) FILTER (WHERE disposition = 'quarantine')
		FROM dead_letters WHERE resolved_at IS NULL GROUP BY 1 ORDER BY 2 DESC, 1`)
	if err != nil {
		return nil, fmt.Errorf("depth by source: %w", err)
	}
	if o.BySource, err = pgx.CollectRows(rows, pgx.RowToStructByPos[sourceCount]); err != nil {
		return nil, fmt.Errorf("depth by source: %w", err)
	}
	r := &o.Readiness
	err = pool.QueryRow(ctx, `
		WITH t AS (
			SELECT next_retry_at, replayed_at IS NOT NULL AND replayed_at >= last_failed_at AS dispatched
			FROM dead_letters WHERE resolved_at IS NULL)
		SELECT count(*) FILTER (WHERE NOT dispatched AND next_retry_at <= now()),
		       count(*) FILTER (WHERE NOT dispatched AND next_retry_at > now()),
		       count(*) FILTER (WHERE NOT dispatched AND next_retry_at IS NULL),
		       count(*) FILTER (WHERE dispatched),
		       min(next_retry_at) FILTER (WHERE NOT dispatched AND next_retry_at > now()),
		       now()
		FROM t`).Scan(&r.Ready, &r.BackingOff, &r.Manual, &r.Dispatched, &r.NextDue, &o.AsOf)
	if err != nil {
		return nil, fmt.Errorf("replay readiness: %w", err)
	}
	if err := o.readShape(ctx, pool); err != nil {
		return nil, err
	}
	if o.Chart, err = arrivalsChart(ctx, pool, o.AsOf); err != nil {
		return nil, err
	}
	if o.Running, err = listRuns(ctx, pool, "", true, 50); err != nil {
		return nil, err
	}
	return o, nil
}

// readShape labels the last shapeWindow the way `sluice dlq report` does:
// dead letters per source, with the sources that ran in the window and
// had none counting as zero, and the newest examples of each spiking
// source (or of the largest ones).
func (o *overview) readShape(ctx context.Context, pool *pgxpool.Pool) error {
	from := o.AsOf.Add(-shapeWindow)
	rows, err := pool.Query(ctx, `
		SELECT s, coalesce(n, 0) FROM (
			SELECT source_id s, count(*) n FROM dead_letters WHERE last_failed_at >= $1 GROUP BY 1
		) d FULL JOIN (
			SELECT DISTINCT source_id s FROM ingest_runs WHERE finished_at IS NULL OR finished_at >= $1
		) r USING (s)`, from)
	if err != nil {
		return fmt.Errorf("shape: %w", err)
	}
	counts := map[string]int{}
	var s string
	var n int
	if _, err := pgx.ForEachRow(rows, []any{&s, &n}, func() error { counts[s] = n; return nil }); err != nil {
		return fmt.Errorf("shape: %w", err)
	}
	o.Shape = shape.Label(counts, shape.DefaultThresholds)
	rows, err = pool.Query(ctx, `
		SELECT dead_letter_id, source_id, error_class FROM (
			SELECT dead_letter_id, source_id, error_class,
			       row_number() OVER (PARTITION BY source_id ORDER BY last_failed_at DESC, dead_letter_id) rn
			FROM dead_letters WHERE last_failed_at >= $1) w
		WHERE rn <= 2 ORDER BY source_id, rn LIMIT 12`, from)
	if err != nil {
		return fmt.Errorf("shape examples: %w", err)
	}
	o.ShapeExamples, err = pgx.CollectRows(rows, pgx.RowToStructByPos[example])
	if err != nil {
		return fmt.Errorf("shape examples: %w", err)
	}
	return nil
}
