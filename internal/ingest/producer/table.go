package producer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/rs/zerolog"

	"github.com/sluicehq/sluice/internal/content/pgtable"
	"github.com/sluicehq/sluice/internal/platform/crashpoint"
	"github.com/sluicehq/sluice/internal/platform/service"
	"github.com/sluicehq/sluice/internal/platform/wait"
	"github.com/sluicehq/sluice/internal/store/erase"
	"github.com/sluicehq/sluice/internal/store/sources"
)

// DefaultFollowPoll is how long a follower waits for a notification
// before it drains anyway.
const DefaultFollowPoll = 30 * time.Second

// CrashAfterRunBeforeAck is the crash point between a table drain's run
// and the acknowledgement of its changes in the application database.
const CrashAfterRunBeforeAck = "after-run-before-ack"

// tableSync drains a declared table source into runs of the producer.
type tableSync struct {
	name    string
	cfg     Config
	rt      *service.Runtime
	app     *pgxpool.Pool
	table   pgtable.Config
	metrics *SourceMetrics
	deletes *erase.Metrics
	crash   func(string)
	explain func(error) error
	stdout  io.Writer
	json    bool
	log     zerolog.Logger
}

// runTable is the producer command over a table source: it installs the
// source's triggers, drains its queue until empty and, with --follow,
// keeps draining as changes are notified.
func runTable(ctx context.Context, f *ServiceConfig, cfg Config, lookup func(string) (string, bool), stdout, stderr io.Writer) error {
	rt, err := service.Start(ctx, "producer", f.Common, service.StartConfig{MaxConns: 4, NATSOptional: true}, stderr)
	if err != nil {
		return err
	}
	defer rt.Close()
	settings, err := sources.GetTable(ctx, rt.Pool, f.TableSource)
	if err != nil {
		if errors.Is(err, sources.ErrNotFound) {
			err = fmt.Errorf("%w: declare it with sluice sources add table %s", err, f.TableSource)
		}
		return service.UsageError(err)
	}
	dsn, err := pgtable.ResolveDSN(settings.DSN, lookup)
	if err != nil {
		return service.UsageError(err)
	}
	app, err := pgxpool.New(ctx, dsn)
	if err != nil {
		return service.UsageError(fmt.Errorf("table source %s: %w", f.TableSource, err))
	}
	defer app.Close()
	t := &tableSync{name: f.TableSource, cfg: cfg, rt: rt, app: app, metrics: NewSourceMetrics(rt.Registry), deletes: erase.NewMetrics(rt.Registry),
		crash: crashpoint.FromEnv(lookup), explain: func(err error) error { return f.Common.Fault("producer", err, false) },
		stdout: stdout, json: f.JSON, log: rt.Log,
		table: pgtable.Config{Source: f.TableSource, Table: settings.Table, ID: settings.ID, Text: settings.Text, Meta: settings.Meta, Filter: settings.Filter}}
	if err := pgtable.Install(ctx, app, t.table); err != nil {
		return err
	}
	rt.Started()
	if !f.Follow {
		return t.drainAll(ctx)
	}
	return t.follow(ctx, dsn, f.FollowPoll)
}

// follow drains the source whenever a change is notified, and at least
// every poll, until ctx is done. A lost connection to the application
// database is logged and retried: what changed meanwhile waits in the
// queue.
func (t *tableSync) follow(ctx context.Context, dsn string, poll time.Duration) error {
	l := pgtable.NewListener(dsn, t.name)
	defer l.Close()
	for {
		// Listening first, a change committed during the drain wakes the
		// next Wait.
		err := l.Listen(ctx)
		if err := t.drainAll(ctx); err != nil && ctx.Err() == nil {
			t.log.Warn().Err(err).Str("source", t.name).Msg("table source drain failed; its changes stay queued and are drained again")
		}
		if err := sources.Followed(ctx, t.rt.Pool, t.name); err != nil && ctx.Err() == nil {
			t.log.Warn().Err(err).Msg("could not record the follower's wake-up")
		}
		if err == nil {
			err = l.Wait(ctx, poll)
		}
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			t.log.Warn().Err(err).Str("source", t.name).Msg("lost the application database; reconnecting")
			if !wait.Sleep(ctx, time.Second, nil) {
				return nil
			}
		}
	}
}

// drainAll drains batches until the queue is empty.
func (t *tableSync) drainAll(ctx context.Context) error {
	for {
		more, err := t.drain(ctx)
		if err != nil || !more {
			return err
		}
	}
}

// drain runs one batch of the queue through a producer run and
// acknowledges it once the run has recorded and published it. It
// reports whether the batch held changes.
func (t *tableSync) drain(ctx context.Context) (bool, error) {
	b, err := pgtable.Open(ctx, t.app, t.table)
	if err != nil {
		return false, err
	}
	defer b.Close(ctx)
	if b.Empty() {
		t.metrics.Pending.WithLabelValues(t.name).Set(0)
		return false, nil
	}
	cfg := t.cfg
	cfg.RunID = ""
	if b.Reload() {
		// A first load or a TRUNCATE: the snapshot is the whole table,
		// and what is not in it is gone.
		cfg.Sync, cfg.MaxDeleteFraction = true, 1
	}
	p, err := New(cfg, t.rt.Pool, t.rt.JS, t.log)
	if err != nil {
		return false, err
	}
	p.DeleteMetrics, p.Crash, p.Explain = t.deletes, t.crash, t.explain
	start := time.Now()
	sum, err := p.Run(ctx, b)
	if err == nil && sum.Stopped != "" {
		err = fmt.Errorf("run %s stopped (%s): its changes stay queued", sum.RunID, sum.Stopped)
	}
	if err == nil {
		t.crash(CrashAfterRunBeforeAck)
		err = b.Ack(ctx)
	}
	var lag *time.Duration
	if err == nil {
		l := time.Since(b.Oldest())
		lag = &l
		t.metrics.Lag.WithLabelValues(t.name).Set(l.Seconds())
	}
	if rerr := sources.RecordSync(context.WithoutCancel(ctx), t.rt.Pool, t.name, lag, err); rerr != nil {
		t.log.Warn().Err(rerr).Msg("could not record the sync")
	}
	if n, perr := pgtable.Pending(ctx, t.app, t.name); perr == nil {
		t.metrics.Pending.WithLabelValues(t.name).Set(float64(n))
	}
	if perr := printSummary(t.stdout, sum, time.Since(start), t.json); perr != nil && err == nil {
		err = perr
	}
	return err == nil, err
}
