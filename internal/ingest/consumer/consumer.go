package consumer

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/failsafe-go/failsafe-go"
	"github.com/failsafe-go/failsafe-go/retrypolicy"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/sluicehq/sluice/internal/ingest/pipeline"
	"github.com/sluicehq/sluice/internal/platform/broker"
	"github.com/sluicehq/sluice/internal/platform/wait"
)

// Gate blocks while the embedder cannot take work: until its breaker is
// closed, probing it without a chunk (embedder.Resilient.WaitReady).
type Gate interface {
	WaitReady(ctx context.Context) error
}

// Config tunes the pull loop.
type Config struct {
	// BatchSize is how many messages one fetch asks for. Defaults to
	// DefaultBatchSize.
	BatchSize int
	// FetchWait is how long a fetch waits to fill a batch; no fetch waits
	// longer. Defaults to DefaultFetchWait.
	FetchWait time.Duration
	// Heartbeat is how often a batch in progress extends its messages'
	// ack deadline. Defaults to DefaultHeartbeat; it must be below
	// AckWait, and the service uses AckWait/4.
	Heartbeat time.Duration
	// AckWait is the durables' AckWait (sluice nats setup --ack-wait),
	// which Heartbeat must stay below. Defaults to broker.DefaultAckWait.
	AckWait time.Duration
	// ShutdownGrace bounds how long in-flight work may run once shutdown
	// begins (SIGTERM), whenever the batch started. Defaults to
	// DefaultShutdownGrace.
	ShutdownGrace time.Duration
	// BatchDeadline bounds one attempt at a batch: the embed stage (the
	// pipeline's soft time limit) plus its commits. Defaults to
	// DefaultBatchDeadline; the service derives it from its settings.
	BatchDeadline time.Duration
	// Durables are the INGEST consumers to pull from. Defaults to workers
	// and replay.
	Durables []string
	// Ping checks PostgreSQL. When a batch cannot be committed and Ping
	// fails too, the consumer holds the batch, heartbeating it so that no
	// delivery is spent, stops every pull loop, and processes the batch
	// again once Ping succeeds. Nil disables holding.
	Ping func(context.Context) error
}

// Defaults of Config.
const (
	DefaultBatchSize     = 64
	DefaultFetchWait     = 250 * time.Millisecond
	DefaultHeartbeat     = 10 * time.Second
	DefaultShutdownGrace = 30 * time.Second
	DefaultBatchDeadline = 3 * time.Minute
)

// Validate says what is wrong with the configuration and how to fix it.
func (c Config) Validate() error {
	c.applyDefaults()
	var errs []error
	if c.BatchSize < 1 {
		errs = append(errs, fmt.Errorf("batch size %d: use at least 1", c.BatchSize))
	}
	if c.FetchWait <= 0 || c.Heartbeat <= 0 || c.ShutdownGrace <= 0 || c.BatchDeadline <= 0 {
		errs = append(errs, errors.New("fetch wait, heartbeat, shutdown grace and batch deadline must be positive"))
	}
	if c.Heartbeat >= c.AckWait {
		errs = append(errs, fmt.Errorf("heartbeat %s is not below ack wait %s: JetStream would redeliver batches in progress; use at most a quarter of the ack wait", c.Heartbeat, c.AckWait))
	}
	return errors.Join(errs...)
}

func (c *Config) applyDefaults() {
	if c.BatchSize == 0 {
		c.BatchSize = DefaultBatchSize
	}
	if c.FetchWait == 0 {
		c.FetchWait = DefaultFetchWait
	}
	if c.Heartbeat == 0 {
		c.Heartbeat = DefaultHeartbeat
	}
	if c.AckWait == 0 {
		c.AckWait = broker.DefaultAckWait
	}
	if c.ShutdownGrace == 0 {
		c.ShutdownGrace = DefaultShutdownGrace
	}
	if c.BatchDeadline == 0 {
		c.BatchDeadline = DefaultBatchDeadline
	}
	if len(c.Durables) == 0 {
		c.Durables = []string{broker.WorkersConsumer, broker.ReplayConsumer}
	}
}

// Processor decides and commits an outcome for every job of a batch:
// *pipeline.Pipeline for live work, the backfill's for later index
// generations. It returns an error only when nothing it decided may be
// acknowledged but what it committed.
type Processor interface {
	Process(ctx context.Context, jobs []*pipeline.Job) error
}

// Consumer is the pull loop of one process.
type Consumer struct {
	// db is closed while PostgreSQL is unreachable: no loop pulls then.
	db gate

	cfg      Config
	js       jetstream.JetStream
	pipe     Processor
	byName   map[string]Processor
	gate     Gate
	log      zerolog.Logger
	messages *prometheus.CounterVec
}

// Deps are what a Consumer works with.
type Deps struct {
	// JS reaches the INGEST durables. Required.
	JS jetstream.JetStream
	// Pipeline processes each batch. Required.
	Pipeline Processor
	// Processors process the batches of the durables they name instead
	// of Pipeline, such as broker.BackfillConsumer's.
	Processors map[string]Processor
	// Gate holds pulls while the embedder cannot take work. Nil for none.
	Gate Gate
	// Log receives the consumer's events.
	Log zerolog.Logger
	// Registry receives sluice_consumer_messages_total. Nil for none.
	Registry prometheus.Registerer
}

// New returns a consumer.
func New(cfg Config, deps Deps) *Consumer {
	cfg.applyDefaults()
	c := &Consumer{cfg: cfg, js: deps.JS, pipe: deps.Pipeline, byName: deps.Processors, gate: deps.Gate, log: deps.Log,
		messages: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_consumer_messages_total",
			Help: "INGEST messages settled, by result (ack, nak, term).",
		}, []string{"durable", "result"}),
	}
	for _, durable := range cfg.Durables {
		for _, result := range []string{"ack", "nak", "term"} {
			c.messages.WithLabelValues(durable, result)
		}
	}
	if deps.Registry != nil {
		deps.Registry.MustRegister(c.messages)
	}
	return c
}

// Run pulls until ctx is done, then finishes the batches in flight and
// returns.
func (c *Consumer) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	for _, durable := range c.cfg.Durables {
		wg.Go(func() { c.loop(ctx, durable) })
	}
	wg.Wait()
	return nil
}

// loop pulls from one durable until ctx is done.
func (c *Consumer) loop(ctx context.Context, durable string) {
	log := c.log.With().Str("durable", durable).Logger()
	cons, err := broker.Lookup(ctx, c.js, broker.IngestStream, durable, log)
	if err != nil {
		return // ctx ended
	}
	replay := durable == broker.ReplayConsumer
	broker.Pull(ctx, cons, broker.PullConfig{BatchSize: c.cfg.BatchSize, MaxWait: c.cfg.FetchWait,
		Admit: c.admit, IdlePause: c.cfg.FetchWait, Log: log},
		func(ctx context.Context, msgs []jetstream.Msg) error {
			if err := c.handle(ctx, durable, msgs, replay); err != nil {
				log.Error().Err(err).Int("messages", len(msgs)).Msg("batch not committed; messages will be redelivered")
				return err
			}
			return nil
		})
}

// admit waits until PostgreSQL answers and the embedder's breaker is
// closed, and says how many messages to fetch. No chunk is fetched to
// probe a half-open breaker: the gate probes it itself, so that an
// outage spends no chunk's deliveries. ok is false when the caller
// should look again.
func (c *Consumer) admit(ctx context.Context) (size int, release func(), ok bool) {
	if err := c.db.wait(ctx); err != nil {
		return 0, nil, false
	}
	if c.gate != nil {
		if err := c.gate.WaitReady(ctx); err != nil {
			return 0, nil, false
		}
	}
	return c.cfg.BatchSize, nil, true
}

// handle runs one batch through the pipeline and settles every message.
// Work in flight survives shutdown for ShutdownGrace from the moment
// shutdown begins: stopping halfway would only turn finished work into
// redeliveries.
func (c *Consumer) handle(ctx context.Context, durable string, msgs []jetstream.Msg, replay bool) error {
	jobs := make([]*pipeline.Job, len(msgs))
	for i, m := range msgs {
		j := &pipeline.Job{Raw: m.Data(), MsgID: m.Headers().Get(jetstream.MsgIDHeader), Replay: replay, Delivered: 1}
		if meta, err := m.Metadata(); err == nil {
			j.Delivered, j.Seq, j.Published = int(meta.NumDelivered), meta.Sequence.Stream, meta.Timestamp
		}
		jobs[i] = j
	}
	work, cancel := c.workContext(ctx)
	defer cancel()
	stop := c.heartbeat(work, msgs)
	proc := c.pipe
	if p, ok := c.byName[durable]; ok {
		proc = p
	}
	err := c.process(work, proc, jobs)
	stop()
	for i, j := range jobs {
		c.settle(durable, msgs[i], j)
	}
	return err
}

// workContext is the context in-flight work runs under: it ends
// ShutdownGrace after ctx does, not when ctx does.
func (c *Consumer) workContext(ctx context.Context) (context.Context, context.CancelFunc) {
	work, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, func() { time.AfterFunc(c.cfg.ShutdownGrace, cancel) })
	return work, func() { stop(); cancel() }
}

// process runs a batch through the pipeline, each attempt bounded by
// BatchDeadline. When an attempt cannot commit because PostgreSQL is
// unreachable, the batch is held (its heartbeat keeps JetStream from
// redelivering it, so no delivery is spent), every loop stops pulling,
// and the batch runs again once PostgreSQL answers.
//
// A transaction PostgreSQL aborted to break a deadlock, or for a
// serialization conflict, is no fault of the batch's chunks: the batch
// runs again in place, after a pause that grows and is jittered so that
// the two sides do not meet again, up to maxConflicts times; redelivered
// instead, the same messages would meet the same conflict and spend
// their deliveries until parked.
func (c *Consumer) process(ctx context.Context, proc Processor, jobs []*pipeline.Job) error {
	conflicts := 0
	for {
		attempt, cancel := context.WithTimeout(ctx, c.cfg.BatchDeadline)
		err := proc.Process(attempt, jobs)
		cancel()
		if lockConflict(err) && conflicts < maxConflicts && ctx.Err() == nil {
			conflicts++
			c.log.Warn().Err(err).Int("messages", len(jobs)).Int("conflicts", conflicts).
				Msg("the batch's transaction lost a lock conflict: running it again in place")
			if !wait.Sleep(ctx, time.Duration(conflicts)*conflictPause+rand.N(2*conflictPause), nil) {
				return err
			}
			for _, j := range jobs {
				j.Reset()
			}
			continue
		}
		if err == nil || c.cfg.Ping == nil || ctx.Err() != nil || c.pingOK(ctx) {
			return err
		}
		c.log.Warn().Err(err).Int("messages", len(jobs)).Msg("postgres unreachable: holding the batch and pausing pulls until it answers")
		c.db.close()
		if err := c.waitForDB(ctx); err != nil {
			return err
		}
		c.db.open()
		c.log.Info().Int("messages", len(jobs)).Msg("postgres answers again: processing the held batch")
		for _, j := range jobs {
			j.Reset()
		}
	}
}

// maxConflicts is how many lock conflicts in a row a batch runs again
// in place before its messages go back to JetStream; conflictPause is
// the unit of the pause before each run.
const (
	maxConflicts  = 8
	conflictPause = 100 * time.Millisecond
)

// lockConflict reports whether err is a transaction PostgreSQL aborted
// to break a deadlock (40P01) or for a serialization failure (40001).
func lockConflict(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && (pgErr.Code == "40P01" || pgErr.Code == "40001")
}

func (c *Consumer) pingOK(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, pingTimeout)
	defer cancel()
	return c.cfg.Ping(ctx) == nil
}

// pingTimeout bounds one database health check.
const pingTimeout = 2 * time.Second

// waitForDB pings PostgreSQL with capped exponential backoff until it
// answers or ctx ends.
func (c *Consumer) waitForDB(ctx context.Context) error {
	policy := retrypolicy.NewBuilder[any]().
		WithMaxRetries(-1).
		WithBackoff(100*time.Millisecond, 2*time.Second).
		Build()
	return failsafe.With(policy).WithContext(ctx).Run(func() error {
		if !c.pingOK(ctx) {
			return errDBUnreachable
		}
		return nil
	})
}

var errDBUnreachable = errors.New("postgres unreachable")

func (c *Consumer) settle(durable string, m jetstream.Msg, j *pipeline.Job) {
	var err error
	result := "ack"
	switch j.Outcome {
	case pipeline.Stored, pipeline.Duplicate, pipeline.Superseded, pipeline.Batched:
		err = m.Ack()
	case pipeline.Parked:
		result = "term"
		err = m.TermWithReason("parked: " + j.Failure.ParkedClass)
	case pipeline.Retry:
		result = "nak"
		err = m.NakWithDelay(j.Delay)
		c.logRetry(durable, j)
	default:
		result = "nak"
		err = m.NakWithDelay(time.Second)
	}
	c.messages.WithLabelValues(durable, result).Inc()
	if err != nil {
		// The outcome is committed; a redelivery will find it and ack.
		c.log.Warn().Err(err).Str("result", result).Msg("settle failed")
	}
}

// logRetry records a retry at info: which chunk, why, which attempt and
// how long until the next, never its text.
func (c *Consumer) logRetry(durable string, j *pipeline.Job) {
	ev := c.log.Info().Str("durable", durable).Int("attempt", j.Delivered).Dur("delay", j.Delay)
	if chunk := j.Chunk(); chunk.DocID != "" {
		ev = pipeline.JobFields(ev, chunk)
	}
	if j.Failure != nil {
		ev = ev.Str("error_class", j.Failure.Decision.Class).Str("stage", j.Failure.Stage)
	}
	ev.Msg("chunk retried")
}

// heartbeat tells JetStream the batch is still being worked on, so a slow
// embedding call does not trigger a redelivery to another worker.
func (c *Consumer) heartbeat(ctx context.Context, msgs []jetstream.Msg) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(c.cfg.Heartbeat)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				for _, m := range msgs {
					_ = m.InProgress()
				}
			}
		}
	}()
	return func() { cancel(); <-done }
}
