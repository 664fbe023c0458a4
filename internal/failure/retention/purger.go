package retention

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
)

// Step is the retention of one table.
type Step struct {
	// Table names the table: the label of sluice_retention_purged_total.
	Table string
	// Purge removes at most limit rows (or values) due at now and returns
	// how many it removed. It must make progress: a call that returns
	// limit has left fewer due rows behind.
	Purge func(ctx context.Context, now time.Time, limit int) (int64, error)
}

// Deps are what a Purger works with.
type Deps struct {
	// Log receives a line per pass that purged something, and failures.
	Log zerolog.Logger
	// Registry receives sluice_retention_purged_total. Nil for none.
	Registry prometheus.Registerer
	// Now is the clock retention is judged by. Defaults to time.Now.
	Now func() time.Time
}

// Purger runs retention steps in bounded batches, once (Pass) or on a
// schedule (Run). It is safe for concurrent use.
type Purger struct {
	cfg    Config
	steps  []Step
	log    zerolog.Logger
	now    func() time.Time
	purged *prometheus.CounterVec
}

// New returns a Purger of steps, run in their order. It registers
// sluice_retention_purged_total on deps.Registry (nil for none) and
// panics if it is already registered there.
func New(cfg Config, deps Deps, steps ...Step) *Purger {
	cfg.applyDefaults()
	p := &Purger{cfg: cfg, steps: steps, log: deps.Log, now: deps.Now,
		purged: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_retention_purged_total",
			Help: "Rows (or values) retention purged, by table.",
		}, []string{"table"})}
	if p.now == nil {
		p.now = time.Now
	}
	for _, s := range steps {
		p.purged.WithLabelValues(s.Table)
	}
	if deps.Registry != nil {
		deps.Registry.MustRegister(p.purged)
	}
	return p
}

// Outcome is what one pass did to one table.
type Outcome struct {
	// Purged counts the rows (or values) purged.
	Purged int64
	// Batches counts the statements run, the last one short.
	Batches int
}

// Pass runs every step once, each in batches until one comes back short,
// judging age against one reading of the clock. A failing step does not
// stop the others; Pass returns what each did and every failure.
func (p *Purger) Pass(ctx context.Context) (map[string]Outcome, error) {
	now := p.now()
	outcomes := make(map[string]Outcome, len(p.steps))
	var errs []error
	for _, s := range p.steps {
		o, err := p.drain(ctx, s, now)
		outcomes[s.Table] = o
		if err != nil {
			errs = append(errs, fmt.Errorf("retention of %s: %w", s.Table, err))
		}
		if o.Purged > 0 {
			p.log.Info().Str("table", s.Table).Int64("purged", o.Purged).Int("batches", o.Batches).Msg("retention purged")
		}
	}
	return outcomes, errors.Join(errs...)
}

func (p *Purger) drain(ctx context.Context, s Step, now time.Time) (Outcome, error) {
	var o Outcome
	for ctx.Err() == nil {
		n, err := s.Purge(ctx, now, p.cfg.Batch)
		if err != nil {
			return o, err
		}
		o.Batches++
		o.Purged += n
		p.purged.WithLabelValues(s.Table).Add(float64(n))
		if n < int64(p.cfg.Batch) {
			return o, nil
		}
	}
	return o, ctx.Err()
}

// Run runs a pass at once and then every Config.Interval until ctx ends.
func (p *Purger) Run(ctx context.Context) {
	t := time.NewTicker(p.cfg.Interval)
	defer t.Stop()
	for {
		if _, err := p.Pass(ctx); err != nil && ctx.Err() == nil {
			p.log.Warn().Err(err).Msg("retention pass")
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
