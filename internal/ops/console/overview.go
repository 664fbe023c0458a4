package console

import (
	"context"
	"fmt"
	"html/template"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sluicehq/sluice/internal/failure/shape"
	"github.com/sluicehq/sluice/internal/store/deadletter"
	"github.com/sluicehq/sluice/internal/store/runs"
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
type example = deadletter.Example

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
	counts, err := deadletter.CountsSince(ctx, pool, from)
	if err != nil {
		return err
	}
	window := shape.Window(counts)
	active, err := runs.ActiveSources(ctx, pool, from, o.AsOf)
	if err != nil {
		return fmt.Errorf("shape: %w", err)
	}
	for _, s := range active {
		if window[s] == nil {
			window[s] = map[string]int{}
		}
	}
	o.Shape = shape.Label(window, shape.DefaultThresholds)
	o.ShapeExamples, err = deadletter.NewestBySource(ctx, pool, from, 2, 12)
	return err
}

// readDepth reads the unresolved depth by class and by source, and the
// replay readiness, in one pass over the table (grouping sets), so the
// overview costs one scan however large the DLQ. Ready counts what the
// replayer replays on its own (deadletter.Replayable), as
// sluice_dlq_ready_to_replay and `sluice dlq stats` do.
func (o *overview) readDepth(ctx context.Context, pool *pgxpool.Pool) error {
	groups, asOf, err := deadletter.ReadDepth(ctx, pool)
	if err != nil {
		return err
	}
	o.AsOf = asOf
	byDisp := map[string]int64{}
	r := &o.Readiness
	for _, g := range groups {
		if g.BySource {
			o.BySource = append(o.BySource, sourceCount{Source: g.Source, N: g.N, Ready: g.Ready, Escalated: g.Escalated, Quarantine: g.Quarantined, Worst: g.Worst})
			continue
		}
		o.ByClass = append(o.ByClass, classCount{Disposition: g.Disposition, ErrorClass: g.ErrorClass, N: g.N, Worst: g.Worst})
		o.Unresolved += g.N
		byDisp[g.Disposition] += g.N
		r.Ready, r.BackingOff, r.Manual, r.Dispatched = r.Ready+g.Ready, r.BackingOff+g.BackingOff, r.Manual+g.Manual, r.Dispatched+g.Dispatched
		if g.NextDue != nil && (r.NextDue == nil || g.NextDue.Before(*r.NextDue)) {
			d := *g.NextDue
			r.NextDue = &d
		}
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
