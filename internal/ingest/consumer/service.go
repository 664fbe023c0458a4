package consumer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sluicehq/sluice/internal/ingest"
	"github.com/sluicehq/sluice/internal/ingest/backfill"
	"github.com/sluicehq/sluice/internal/ingest/pipeline"
	"github.com/sluicehq/sluice/internal/platform/broker"
	"github.com/sluicehq/sluice/internal/platform/config"
	"github.com/sluicehq/sluice/internal/platform/service"
	"github.com/sluicehq/sluice/internal/provider/batchapi"
	"github.com/sluicehq/sluice/internal/provider/embedder"
	"github.com/sluicehq/sluice/internal/store/bulk"
	"github.com/sluicehq/sluice/internal/store/runs"
)

// DefaultWorkers is ServiceConfig.Workers' default. Three loops keep a
// consumer's CPU as busy as two on clean work, and let work go on while
// one loop waits out a 429's Retry-After: in make bench, a storm of 20%
// 429s kept 0.70 of the clean throughput with three, 0.50 with two.
const DefaultWorkers = 3

// ServiceConfig is the consumer service's configuration.
type ServiceConfig struct {
	ingest.Config
	// Workers is the number of concurrent pull loops per durable.
	// Defaults to DefaultWorkers.
	Workers int
	// BatchSize is how many messages one fetch asks for. Defaults to
	// DefaultBatchSize.
	BatchSize int
	// FetchWait is how long a fetch waits to fill a batch. Defaults to
	// DefaultFetchWait.
	FetchWait time.Duration
	// AckWait is the durables' AckWait, as given to sluice nats setup;
	// batches are heartbeated every AckWait/4. Defaults to
	// broker.DefaultAckWait.
	AckWait time.Duration
	// ShutdownGrace bounds in-flight work after SIGTERM. Defaults to
	// DefaultShutdownGrace.
	ShutdownGrace time.Duration
	// BackfillWorkers is the number of pull loops on the backfill
	// durable, which writes later index generations; 0 leaves the
	// backfill to other consumers. Defaults to DefaultBackfillWorkers.
	BackfillWorkers int
	// BackfillBacklog bounds the backfill's outstanding messages.
	// Defaults to backfill.DefaultBacklog.
	BackfillBacklog int
}

// DefaultBackfillWorkers is ServiceConfig.BackfillWorkers' default: one
// loop, so that a backfill takes at most one batch's share of the
// provider from live work per consumer.
const DefaultBackfillWorkers = 1

// Register registers the consumer's settings on l.
func (c *ServiceConfig) Register(l *config.Loader) {
	c.Config.Register(l, "127.0.0.1:9101")
	c.Config.RegisterBulk(l)
	l.Int(&c.Workers, "workers", "CONSUMER_WORKERS", DefaultWorkers, "concurrent pull loops per durable")
	l.Int(&c.BatchSize, "batch-size", "BATCH_SIZE", DefaultBatchSize, "messages per fetch")
	l.Duration(&c.FetchWait, "fetch-wait", "FETCH_WAIT", DefaultFetchWait, "how long a fetch waits to fill a batch")
	l.Duration(&c.AckWait, "ack-wait", "ACK_WAIT", broker.DefaultAckWait, "the durables' AckWait, as given to sluice nats setup: live workers heartbeat their batch every ACK_WAIT/4")
	l.Int(&c.BackfillWorkers, "backfill-workers", "BACKFILL_WORKERS", DefaultBackfillWorkers, "pull loops on the backfill durable, which writes later index generations (0: none in this process)")
	l.Int(&c.BackfillBacklog, "backfill-backlog", "BACKFILL_BACKLOG", backfill.DefaultBacklog, "most backfill messages outstanding at once")
	l.Duration(&c.ShutdownGrace, "shutdown-grace", "SHUTDOWN_GRACE", DefaultShutdownGrace, "how long in-flight batches may run after SIGTERM")
}

// Validate says what is wrong with the consumer's settings and how to fix
// it.
func (c *ServiceConfig) Validate() error {
	var errs []error
	if err := c.Config.Validate(); err != nil {
		errs = append(errs, err)
	}
	if c.AckWait < time.Second {
		errs = append(errs, fmt.Errorf("ACK_WAIT %s: use at least 1s; a live worker heartbeats its batch every ACK_WAIT/4, so only a dead worker's batch waits this long", c.AckWait))
	}
	if c.BackfillWorkers < 0 || c.BackfillBacklog < 1 {
		errs = append(errs, fmt.Errorf("BACKFILL_WORKERS %d and BACKFILL_BACKLOG %d: use at least 0 and 1", c.BackfillWorkers, c.BackfillBacklog))
	}
	if c.Workers < 1 || c.BatchSize < 1 {
		errs = append(errs, fmt.Errorf("CONSUMER_WORKERS %d and BATCH_SIZE %d: use at least 1 each", c.Workers, c.BatchSize))
	}
	if c.ShutdownGrace <= 0 {
		errs = append(errs, fmt.Errorf("SHUTDOWN_GRACE %s: use a positive duration", c.ShutdownGrace))
	}
	return errors.Join(errs...)
}

// Run is the consumer service: it runs until ctx ends.
func Run(ctx context.Context, args []string, lookup func(string) (string, bool), stderr io.Writer) error {
	var cfg ServiceConfig
	if _, err := service.Load("consumer", args, lookup, stderr, &cfg); err != nil {
		return err
	}
	rt, err := service.Start(ctx, "consumer", cfg.Common, service.StartConfig{
		MaxConns: int32(max(4, 2*cfg.Workers+2))}, stderr)
	if err != nil {
		return err
	}
	defer rt.Close()
	pipe, emb, leave, err := cfg.Build(ctx, rt, lookup)
	if err != nil {
		return err
	}
	// Runs before rt.Close (deferred earlier): the consumer holds its
	// share of the fleet budget until its in-flight batches are done.
	defer leave()
	durables := make([]string, 0, 2*cfg.Workers+cfg.BackfillWorkers)
	for range cfg.Workers {
		durables = append(durables, broker.WorkersConsumer, broker.ReplayConsumer)
	}
	for range cfg.BackfillWorkers {
		durables = append(durables, broker.BackfillConsumer)
	}
	rt.Registry.MustRegister(NewLagCollector(rt.JS), runs.NewHaltedCollector(rt.Pool))
	ccfg := Config{BatchSize: cfg.BatchSize, FetchWait: cfg.FetchWait, Heartbeat: cfg.AckWait / 4, AckWait: cfg.AckWait, Durables: durables,
		ShutdownGrace: cfg.ShutdownGrace, BatchDeadline: cfg.BatchDeadline(), Ping: rt.Pool.Ping}
	if err := ccfg.Validate(); err != nil {
		return service.UsageError(err)
	}
	c := New(ccfg, Deps{JS: rt.JS, Pipeline: pipe, Gate: emb, Log: rt.Log, Registry: rt.Registry,
		Processors: map[string]Processor{broker.BackfillConsumer: backfill.NewProcessor(cfg.Backfill())}})
	if cfg.BackfillWorkers > 0 {
		planner := backfill.NewPlanner(backfill.Config{Backlog: cfg.BackfillBacklog, ReplayDelay: cfg.ParkRetryDelay, MaxReplays: cfg.MaxReplays},
			backfill.Deps{Pool: rt.Pool, JS: rt.JS, Log: rt.Log, Registry: rt.Registry})
		defer background(ctx, planner.Run)()
	}
	if b := cfg.Bulk(); b != nil {
		stop, err := runBulk(ctx, rt, cfg.Embedder, b, byGeneration{live: pipe, later: cfg.Backfill()})
		if err != nil {
			return err
		}
		defer stop()
	}
	defer background(ctx, pipe.SweepClaims)()
	rt.Started()
	rt.Log.Info().Int("workers", cfg.Workers).Int("batch_size", cfg.BatchSize).Str("embedder", cfg.Embedder.URL).Msg("consumer started")
	err = c.Run(ctx)
	rt.Log.Info().Msg("consumer stopped")
	return err
}

// background runs fn in a goroutine until the returned stop is called,
// which cancels fn's context and waits for it to return.
func background(ctx context.Context, fn func(context.Context)) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn(ctx)
	}()
	return func() { cancel(); <-done }
}

// runBulk runs bulk mode's builder, which sends sealed batches to the
// provider, and its poller, which follows them and applies their results
// through the pipelines, until the returned stop is called.
func runBulk(ctx context.Context, rt *service.Runtime, emb embedder.Settings, b *ingest.Bulk, pipes byGeneration) (stop func(), err error) {
	client, err := batchapi.New(batchapi.Config{URL: emb.URL, APIKey: emb.APIKey})
	if err != nil {
		return nil, service.UsageError(err)
	}
	builder, err := bulk.NewBuilder(rt.Pool, client, b.Config, b.Deps)
	if err != nil {
		return nil, service.UsageError(err)
	}
	poller, err := bulk.NewPoller(rt.Pool, client, pipes, pipes, b.Config, b.Deps)
	if err != nil {
		return nil, service.UsageError(err)
	}
	bulkCtx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { builder.Run(bulkCtx) })
	wg.Go(func() { poller.Run(bulkCtx) })
	rt.Log.Info().Dur("interval", b.Config.Interval).Dur("max_age", b.Config.MaxAge).Msg("bulk mode: builder and poller started")
	return func() { cancel(); wg.Wait() }, nil
}

// byGeneration applies a bulk batch's results, and hands back what it
// did not answer, through the pipeline of the batch's index generation:
// live for generation 1, the backfill's for a later one. A generation
// dropped meanwhile takes nothing.
type byGeneration struct {
	live  *pipeline.Pipeline
	later func(context.Context, int) (*pipeline.Pipeline, error)
}

func (g byGeneration) pipeline(ctx context.Context, gen int) (*pipeline.Pipeline, error) {
	if gen <= 1 {
		return g.live, nil
	}
	return g.later(ctx, gen)
}

// Apply implements bulk.Applier; a batch's members share its generation.
func (g byGeneration) Apply(ctx context.Context, tx pgx.Tx, results []bulk.Result) error {
	p, err := g.pipeline(ctx, results[0].Member.Generation)
	if err != nil || p == nil {
		return err
	}
	return p.Apply(ctx, tx, results)
}

// Requeue implements bulk.Requeuer.
func (g byGeneration) Requeue(ctx context.Context, tx pgx.Tx, owed []bulk.Owed) error {
	p, err := g.pipeline(ctx, owed[0].Member.Generation)
	if err != nil || p == nil {
		return err
	}
	return p.Requeue(ctx, tx, owed)
}
