package console

import (
	"context"
	"fmt"
	"html/template"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sluicehq/sluice/internal/failure/shape"
	"github.com/sluicehq/sluice/internal/store/deadletter"
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
	Generations   []generationRow
}

// count is a labelled number.
type count struct {
	Key string
	N   int64
}

// classCount is unresolved dead letters of one class and disposition;
// Worst is the most attempts any of them took.
type classCount struct {
	Disposition, ErrorClass string
	N, Worst                int64
}

// sourceCount is unresolved dead letters of one source; Worst is the most
// attempts any of them took.
type sourceCount struct {
	Source     string
	N, Ready   int64
	Escalated  int64
	Quarantine int64
	Worst      int64
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
	if err := o.readDepth(ctx, pool); err != nil {
		return nil, err
	}
	err := o.readShape(ctx, pool)
	if err != nil {
		return nil, err
	}
	if o.Chart, err = arrivalsChart(ctx, pool, o.AsOf); err != nil {
		return nil, err
	}
	if o.Running, err = listRuns(ctx, pool, "", true, 50); err != nil {
		return nil, err
	}
	if o.Generations, err = readGenerations(ctx, pool); err != nil {
		return nil, err
	}
	return o, nil
}

// readShape labels the last shapeWindow the way `sluice dlq report` does:
// dead letters per source and error class, with the sources that ran in
// the window and had none counting as empty, and the newest examples of
// each spiking source (or of the largest ones).
func (o *overview) readShape(ctx context.Context, pool *pgxpool.Pool) error {
	from := o.AsOf.Add(-shapeWindow)
	rows, err := pool.Query(ctx, `
		SELECT s, coalesce(class, ''), coalesce(n, 0) FROM (
			SELECT source_id s, error_class class, count(*) n FROM dead_letters WHERE last_failed_at >= $1 GROUP BY 1, 2
		) d FULL JOIN (
			SELECT DISTINCT source_id s FROM ingest_runs WHERE finished_at IS NULL OR finished_at >= $1
		) r USING (s)`, from)
	if err != nil {
		return fmt.Errorf("shape: %w", err)
	}
	window := shape.Window{}
	var s, class string
	var n int
	if _, err := pgx.ForEachRow(rows, []any{&s, &class, &n}, func() error {
		if window[s] == nil {
			window[s] = map[string]int{}
		}
		if n > 0 {
			window[s][class] += n
		}
		return nil
	}); err != nil {
		return fmt.Errorf("shape: %w", err)
	}
	o.Shape = shape.Label(window, shape.DefaultThresholds)
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

// readDepth reads the unresolved depth by class and by source, and the
// replay readiness, in one pass over the table (grouping sets), so the
// overview costs one scan however large the DLQ. Ready counts what the
// replayer replays on its own (deadletter.Replayable), as
// sluice_dlq_ready_to_replay and `sluice dlq stats` do.
func (o *overview) readDepth(ctx context.Context, pool *pgxpool.Pool) error {
	rows, err := pool.Query(ctx, `
		WITH t AS (
			SELECT disposition, error_class, source_id, next_retry_at, attempts, `+deadletter.ReplayableSQL()+` AS replayable,
			       replayed_at IS NOT NULL AND replayed_at >= last_failed_at AS dispatched
			FROM dead_letters WHERE resolved_at IS NULL)
		SELECT grouping(source_id) = 1, coalesce(disposition, ''), coalesce(error_class, ''), coalesce(source_id, ''), count(*),
		       count(*) FILTER (WHERE replayable AND NOT dispatched AND next_retry_at <= now()),
		       count(*) FILTER (WHERE NOT dispatched AND next_retry_at > now()),
		       count(*) FILTER (WHERE NOT dispatched AND next_retry_at IS NULL),
		       count(*) FILTER (WHERE dispatched),
		       count(*) FILTER (WHERE disposition = 'escalate'),
		       count(*) FILTER (WHERE disposition = 'quarantine'),
		       min(next_retry_at) FILTER (WHERE NOT dispatched AND next_retry_at > now()),
		       max(attempts), now()
		FROM t GROUP BY GROUPING SETS ((disposition, error_class), (source_id))
		ORDER BY 5 DESC, 2, 3, 4`)
	if err != nil {
		return fmt.Errorf("dead-letter depth: %w", err)
	}
	var byClass bool
	var disp, class, source string
	var n, ready, backing, manual, dispatched, escalated, quarantined, worst int64
	var due *time.Time
	byDisp := map[string]int64{}
	r := &o.Readiness
	_, err = pgx.ForEachRow(rows, []any{&byClass, &disp, &class, &source, &n, &ready, &backing, &manual, &dispatched, &escalated, &quarantined, &due, &worst, &o.AsOf}, func() error {
		if !byClass {
			o.BySource = append(o.BySource, sourceCount{Source: source, N: n, Ready: ready, Escalated: escalated, Quarantine: quarantined, Worst: worst})
			return nil
		}
		o.ByClass = append(o.ByClass, classCount{Disposition: disp, ErrorClass: class, N: n, Worst: worst})
		o.Unresolved += n
		byDisp[disp] += n
		r.Ready, r.BackingOff, r.Manual, r.Dispatched = r.Ready+ready, r.BackingOff+backing, r.Manual+manual, r.Dispatched+dispatched
		if due != nil && (r.NextDue == nil || due.Before(*r.NextDue)) {
			d := *due
			r.NextDue = &d
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("dead-letter depth: %w", err)
	}
	if o.AsOf.IsZero() {
		if err := pool.QueryRow(ctx, `SELECT now()`).Scan(&o.AsOf); err != nil {
			return fmt.Errorf("dead-letter depth: %w", err)
		}
	}
	for _, d := range []string{"retry", "quarantine", "ambiguous", "escalate"} {
		o.ByDisposition = append(o.ByDisposition, count{d, byDisp[d]})
	}
	return nil
}
