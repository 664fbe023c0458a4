package publish

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/sluicehq/sluice/internal/platform/broker"
	"github.com/sluicehq/sluice/internal/store/manifest"
)

// Defaults of SweeperConfig.
const (
	DefaultGrace         = time.Minute
	DefaultSweepInterval = 10 * time.Second
	DefaultSweepBatch    = 500
)

// SweeperConfig tunes a Sweeper.
type SweeperConfig struct {
	// Grace is how long a recorded job may wait for its producer's own
	// PubAck before the sweeper publishes it. Defaults to DefaultGrace.
	Grace time.Duration
	// Interval spaces sweeps. Defaults to DefaultSweepInterval.
	Interval time.Duration
	// BatchSize is how many owed rows one query reads; memory stays
	// bounded by it whatever the backlog. Defaults to DefaultSweepBatch.
	BatchSize int
}

func (c *SweeperConfig) applyDefaults() {
	if c.Grace == 0 {
		c.Grace = DefaultGrace
	}
	if c.Interval == 0 {
		c.Interval = DefaultSweepInterval
	}
	if c.BatchSize == 0 {
		c.BatchSize = DefaultSweepBatch
	}
}

// Validate says what is wrong with the configuration and how to fix it.
func (c SweeperConfig) Validate() error {
	c.applyDefaults()
	var errs []error
	if c.Grace < 0 {
		errs = append(errs, fmt.Errorf("owed grace %s: use 0 or more", c.Grace))
	}
	if c.Interval <= 0 {
		errs = append(errs, fmt.Errorf("sweep interval %s: use a positive duration", c.Interval))
	}
	if c.BatchSize < 1 {
		errs = append(errs, fmt.Errorf("sweep batch %d: use at least 1", c.BatchSize))
	}
	return errors.Join(errs...)
}

// Sweeper publishes owed work nobody confirmed: chunk jobs recorded but
// never acknowledged by JetStream (a producer killed after its commit, or
// run while NATS was down), and jobs whose confirmation predates the
// INGEST stream they were published to (the stream was lost and
// recreated). It judges by confirmation state, never by age alone, so a
// large live backlog is never mistaken for lost work. Several sweepers may
// run at once: publishes are idempotent and verified.
type Sweeper struct {
	cfg SweeperConfig
	pub *Publisher
	js  jetstream.JetStream
	log zerolog.Logger

	owed        *prometheus.GaugeVec
	republished prometheus.Counter
	regenerated prometheus.Counter
	failures    prometheus.Counter

	// checked is the creation time of the INGEST stream whose lost
	// confirmations were last swept; only a new stream needs that scan.
	checked time.Time
}

// SweeperDeps are what a Sweeper works with.
type SweeperDeps struct {
	// Pool holds the manifest. Required.
	Pool *pgxpool.Pool
	// JS publishes owed jobs. Required.
	JS jetstream.JetStream
	// Log receives the sweeper's events.
	Log zerolog.Logger
	// Registry receives the sweeper's metrics. Nil for none.
	Registry prometheus.Registerer
}

// NewSweeper returns a sweeper, or the configuration's problems.
func NewSweeper(cfg SweeperConfig, deps SweeperDeps) (*Sweeper, error) {
	pool, js, log, reg := deps.Pool, deps.JS, deps.Log, deps.Registry
	cfg.applyDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Sweeper{cfg: cfg, pub: NewPublisher(pool, js, PublisherConfig{}), js: js, log: log,
		owed: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "sluice_owed_chunks",
			Help: "Pending chunks whose publish JetStream has not confirmed: state unconfirmed (all) or overdue (past the grace period).",
		}, []string{"state"}),
		republished: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "sluice_owed_republished_total", Help: "Owed chunk jobs the sweeper published and JetStream confirmed.",
		}),
		regenerated: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "sluice_owed_regenerated_total", Help: "Owed chunk jobs whose message had vanished from INGEST, published again under a new generation.",
		}),
		failures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "sluice_owed_publish_failures_total", Help: "Owed chunk jobs a sweep could not publish; they stay owed for the next sweep.",
		}),
	}
	if reg != nil {
		reg.MustRegister(s.owed, s.republished, s.regenerated, s.failures)
	}
	return s, nil
}

// Run sweeps every Interval until ctx ends.
func (s *Sweeper) Run(ctx context.Context) error {
	t := time.NewTicker(s.cfg.Interval)
	defer t.Stop()
	for {
		if res, err := s.Sweep(ctx, "", s.cfg.Grace); err != nil && ctx.Err() == nil {
			s.log.Warn().Err(err).Msg("owed work sweep failed; trying again next interval")
		} else if res.Confirmed > 0 || len(res.Failed) > 0 {
			ev := s.log.Info()
			if len(res.Failed) > 0 {
				ev = s.log.Warn().AnErr("last_error", res.Err)
			}
			ev.Int("republished", res.Confirmed).Int("regenerated", res.Regenerated).Int("failed", len(res.Failed)).
				Msg("owed chunk jobs published")
		}
		s.gauge(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// Sweep publishes the owed jobs of source ("" for all) recorded more
// than grace ago, in batches of BatchSize, and returns the sum of what it
// achieved. It stops early when the server is unreachable: the rest stays
// owed for the next sweep.
func (s *Sweeper) Sweep(ctx context.Context, source string, grace time.Duration) (Result, error) {
	var total Result
	created, err := s.streamCreated(ctx)
	if err != nil {
		return total, err
	}
	lost := !created.Equal(s.checked)
	var after manifest.Owed
	for {
		jobs, last, err := s.owedBatch(ctx, lost, source, grace, created, after)
		if err != nil || len(jobs) == 0 {
			return total, err
		}
		res, err := s.pub.Publish(ctx, jobs)
		total.Confirmed += res.Confirmed
		total.Regenerated += res.Regenerated
		total.Failed = append(total.Failed, res.Failed...)
		if res.Err != nil {
			total.Err = res.Err
		}
		s.republished.Add(float64(res.Confirmed))
		s.regenerated.Add(float64(res.Regenerated))
		s.failures.Add(float64(len(res.Failed)))
		if err != nil {
			return total, err
		}
		if Unavailable(res.Err) {
			return total, nil
		}
		if len(jobs) < s.cfg.BatchSize {
			if lost && len(total.Failed) == 0 {
				s.checked = created
			}
			return total, nil
		}
		after = last
	}
}

// streamCreated returns when INGEST was created: a confirmation older
// than that points into a lost stream. A missing stream is
// broker.ErrTopologyMissing; the sweeper cannot declare it (only the
// topology owner can) and republishes once it is back.
func (s *Sweeper) streamCreated(ctx context.Context) (time.Time, error) {
	stream, err := broker.Stream(ctx, s.js, broker.IngestStream)
	if err != nil {
		return time.Time{}, fmt.Errorf("inspect INGEST: %w", err)
	}
	return stream.CachedInfo().Created, nil
}

// owedBatch reads the next batch of owed rows after the given one, with
// the rows confirmed before INGEST's creation when lost.
func (s *Sweeper) owedBatch(ctx context.Context, lost bool, source string, grace time.Duration, created time.Time, after manifest.Owed) ([]Job, manifest.Owed, error) {
	page, err := manifest.OwedPage(ctx, s.pub.pool, manifest.OwedQuery{Grace: grace, StreamCreated: created, Lost: lost,
		Source: source, AfterDoc: after.DocID, AfterIndex: after.Index, Limit: s.cfg.BatchSize})
	if err != nil || len(page) == 0 {
		return nil, after, err
	}
	jobs := make([]Job, len(page))
	for i, c := range page {
		jobs[i] = Job{DocID: c.DocID, Index: c.Index, Version: c.Version, Gen: c.Gen, Source: c.Source, Raw: c.Job}
	}
	return jobs, page[len(page)-1], nil
}

func (s *Sweeper) gauge(ctx context.Context) {
	all, overdue, err := manifest.CountUnconfirmed(ctx, s.pub.pool, s.cfg.Grace)
	if err == nil {
		s.owed.WithLabelValues("unconfirmed").Set(float64(all))
		s.owed.WithLabelValues("overdue").Set(float64(overdue))
	}
}
