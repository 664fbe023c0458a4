package backfill

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/sluicehq/sluice/internal/ingest/pipeline"
	"github.com/sluicehq/sluice/internal/platform/broker"
	"github.com/sluicehq/sluice/internal/store/bulk"
	"github.com/sluicehq/sluice/internal/store/generation"
	"github.com/sluicehq/sluice/pkg/classify"
	"github.com/sluicehq/sluice/pkg/messages"
	"github.com/sluicehq/sluice/pkg/puback"
)

// Planner defaults.
const (
	// DefaultBacklog bounds the backfill's messages outstanding at once:
	// published and not yet acknowledged.
	DefaultBacklog = 512
	// DefaultPage is how many owed chunks one scan step queues.
	DefaultPage = 512
	// DefaultInterval is how often the planner looks for work.
	DefaultInterval = time.Second
	// DefaultCheckInterval is how often it checks whether a generation
	// whose pass ended still owes chunks (another pass) or is complete
	// (ready).
	DefaultCheckInterval = 15 * time.Second
)

// Config tunes a Planner.
type Config struct {
	// Backlog bounds the backfill durable's outstanding messages.
	// Defaults to DefaultBacklog.
	Backlog int
	// Page is one scan step's size. Defaults to DefaultPage.
	Page int
	// Interval and CheckInterval default to DefaultInterval and
	// DefaultCheckInterval.
	Interval, CheckInterval time.Duration
	// ReplayDelay is how long a chunk parked by a transient failure
	// waits before it is owed again, at most MaxReplays times: the
	// replayer's PARK_RETRY_DELAY and MAX_REPLAYS. They default to
	// pipeline.DefaultParkRetryDelay and pipeline.DefaultMaxReplays.
	ReplayDelay time.Duration
	MaxReplays  int
}

func (c *Config) applyDefaults() {
	if c.Backlog <= 0 {
		c.Backlog = DefaultBacklog
	}
	if c.Page <= 0 {
		c.Page = DefaultPage
	}
	if c.Interval <= 0 {
		c.Interval = DefaultInterval
	}
	if c.CheckInterval <= 0 {
		c.CheckInterval = DefaultCheckInterval
	}
	if c.ReplayDelay <= 0 {
		c.ReplayDelay = pipeline.DefaultParkRetryDelay
	}
	if c.MaxReplays <= 0 {
		c.MaxReplays = pipeline.DefaultMaxReplays
	}
}

// Planner queues and publishes what later generations owe. Every
// consumer runs one; they share the work through PostgreSQL's row locks.
type Planner struct {
	cfg       Config
	pool      *pgxpool.Pool
	js        jetstream.JetStream
	sender    *puback.Sender
	log       zerolog.Logger
	now       func() time.Time
	published prometheus.Counter
	planned   *prometheus.CounterVec
	// lastCheck is when transient parked chunks were last released;
	// checked, when each generation was last checked and found neither
	// ready nor owing another pass.
	lastCheck time.Time
	checked   map[int]time.Time
}

// Deps are a Planner's collaborators.
type Deps struct {
	Pool *pgxpool.Pool
	JS   jetstream.JetStream
	Log  zerolog.Logger
	// Registry receives the planner's metrics; nil for none.
	Registry prometheus.Registerer
	// Now defaults to time.Now.
	Now func() time.Time
}

// NewPlanner returns a Planner.
func NewPlanner(cfg Config, deps Deps) *Planner {
	cfg.applyDefaults()
	p := &Planner{cfg: cfg, pool: deps.Pool, js: deps.JS, sender: puback.NewSender(deps.JS, broker.IngestStream), log: deps.Log, now: deps.Now,
		published: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "sluice_backfill_published_total",
			Help: "Chunks owed to later index generations published to INGEST's backfill subjects.",
		}),
		planned: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_backfill_planned_total",
			Help: "Chunks a later index generation's scan queued, by generation.",
		}, []string{"generation"}),
	}
	if p.now == nil {
		p.now = time.Now
	}
	p.checked = map[int]time.Time{}
	if deps.Registry != nil {
		deps.Registry.MustRegister(p.published, p.planned)
	}
	return p
}

// Run plans until ctx ends. A failed step is logged and tried again on
// the next tick: everything it did not commit is still in PostgreSQL.
func (p *Planner) Run(ctx context.Context) {
	t := time.NewTicker(p.cfg.Interval)
	defer t.Stop()
	for {
		if err := p.Step(ctx); err != nil && ctx.Err() == nil {
			p.log.Warn().Err(err).Msg("backfill step failed; trying again")
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Step publishes what is queued, as far as the backlog allows, scans
// the next page of each generation whose pass has not ended when the
// queue runs low, releases chunks parked by a transient failure every
// CheckInterval, and checks the generations that are due (see due):
// another pass, or ready.
func (p *Planner) Step(ctx context.Context) error {
	gens, err := generation.List(ctx, p.pool)
	if err != nil {
		return err
	}
	kept := later(gens)
	if err := p.publishQueued(ctx); err != nil {
		return err
	}
	if len(kept) == 0 {
		return nil
	}
	if err := p.planPages(ctx, kept); err != nil {
		return err
	}
	if err := p.releaseTransient(ctx); err != nil {
		return err
	}
	return p.checkDue(ctx, kept)
}

// later are the generations a backfill writes: after the first, not
// dropped.
func later(gens []generation.Generation) []generation.Generation {
	var kept []generation.Generation
	for _, g := range gens {
		if g.ID != generation.First && g.Status != generation.Dropped {
			kept = append(kept, g)
		}
	}
	return kept
}

// publishQueued publishes queued chunks while the backfill durable has
// room under Backlog.
func (p *Planner) publishQueued(ctx context.Context) error {
	outstanding, err := p.outstanding(ctx)
	if err != nil {
		return err
	}
	if room := p.cfg.Backlog - outstanding; room > 0 {
		return p.publish(ctx, room)
	}
	return nil
}

// planPages scans the next page of each of kept, in turn, while fewer
// than a Page of chunks are queued; a generation another consumer is
// scanning is left to it.
func (p *Planner) planPages(ctx context.Context, kept []generation.Generation) error {
	backlog, err := generation.Backlog(ctx, p.pool)
	if err != nil {
		return err
	}
	queued := int64(0)
	for _, n := range backlog {
		queued += n
	}
	for _, g := range kept {
		if queued >= int64(p.cfg.Page) {
			break
		}
		plan, err := p.plan(ctx, g.ID)
		if errors.Is(err, generation.ErrBusy) {
			continue
		}
		if err != nil {
			return err
		}
		queued += int64(plan.Queued)
	}
	return nil
}

// releaseTransient makes chunks parked by a transient failure owed
// again, once their ReplayDelay has passed and at most MaxReplays times,
// every CheckInterval.
func (p *Planner) releaseTransient(ctx context.Context) error {
	if p.now().Sub(p.lastCheck) < p.cfg.CheckInterval {
		return nil
	}
	p.lastCheck = p.now()
	released, err := generation.Release(ctx, p.pool, classify.ExhaustedTransientClasses(), p.now().Add(-p.cfg.ReplayDelay), p.cfg.MaxReplays)
	if err != nil {
		return err
	}
	if released > 0 {
		p.log.Info().Int64("chunks", released).Msg("chunks parked by a transient failure owed again to later generations")
	}
	return nil
}

// checkDue checks each generation of kept that is due: another pass,
// or ready. It does so only while nothing is queued or in flight for
// any generation: the queue is read before the durable, both afresh, so
// that a chunk another consumer moves from one to the other meanwhile is
// seen in one of them.
func (p *Planner) checkDue(ctx context.Context, kept []generation.Generation) error {
	due := p.due(kept)
	if len(due) == 0 {
		return nil
	}
	if idle, err := p.idle(ctx); err != nil || !idle {
		return err
	}
	for _, g := range due {
		moved, err := p.check(ctx, g)
		if err != nil {
			return err
		}
		if !moved {
			p.checked[g.ID] = p.now()
		}
	}
	return nil
}

// due are the generations to check on this step: a building one as
// soon as its backfill is idle, so that it is ready within a step of its
// last vector, unless a check found it stuck (parked chunks) less than
// CheckInterval ago; any other every CheckInterval, since its check
// scans the manifest for what it may lack.
func (p *Planner) due(kept []generation.Generation) []generation.Generation {
	var out []generation.Generation
	for _, g := range kept {
		if g.Status == generation.Building && p.checked[g.ID].IsZero() || p.now().Sub(p.checked[g.ID]) >= p.cfg.CheckInterval {
			out = append(out, g)
		}
	}
	return out
}

// idle reports whether nothing is queued, nothing waits in a bulk batch
// and the backfill durable has nothing outstanding.
func (p *Planner) idle(ctx context.Context) (bool, error) {
	backlog, err := generation.Backlog(ctx, p.pool)
	if err != nil {
		return false, err
	}
	batched, err := bulk.PendingLater(ctx, p.pool)
	if err != nil {
		return false, err
	}
	for _, n := range backlog {
		if n > 0 {
			return false, nil
		}
	}
	for _, n := range batched {
		if n > 0 {
			return false, nil
		}
	}
	outstanding, err := p.outstanding(ctx)
	return outstanding == 0, err
}

// outstanding counts the backfill durable's messages not yet
// acknowledged, delivered or not.
func (p *Planner) outstanding(ctx context.Context) (int, error) {
	cons, err := p.js.Consumer(ctx, broker.IngestStream, broker.BackfillConsumer)
	if err != nil {
		return 0, fmt.Errorf("find the backfill durable: %w", err)
	}
	info, err := cons.Info(ctx)
	if err != nil {
		return 0, fmt.Errorf("inspect the backfill durable: %w", err)
	}
	return int(info.NumPending) + info.NumAckPending, nil
}

// publish publishes up to limit queued chunks and removes them from the
// queue once every one is in INGEST, in one transaction; nothing is
// removed if any publish fails.
func (p *Planner) publish(ctx context.Context, limit int) error {
	var n int
	err := pgx.BeginFunc(ctx, p.pool, func(tx pgx.Tx) error {
		owed, err := generation.Take(ctx, tx, limit)
		if err != nil || len(owed) == 0 {
			return err
		}
		msgs := make([]*nats.Msg, len(owed))
		for i, o := range owed {
			body, err := Encode(o)
			if err != nil {
				return err
			}
			msgs[i] = &nats.Msg{Subject: messages.BackfillSubject(o.SourceID), Data: body, Header: nats.Header{}}
			msgs[i].Header.Set(jetstream.MsgIDHeader, MsgID(o))
		}
		// A second copy of a backfill message changes nothing (the
		// version guard, the reuse of the vector just stored), so one
		// whose first copy is gone goes out again under a new id.
		acks, err := p.sender.Send(ctx, msgs, puback.RepublishGone(maxRepublish))
		if err != nil {
			return err
		}
		for i, a := range acks {
			if a.Err != nil {
				return fmt.Errorf("publish a chunk owed to generation %d: %w", owed[i].Generation, a.Err)
			}
		}
		n = len(owed)
		return generation.Remove(ctx, tx, owed)
	})
	if err != nil {
		return err
	}
	p.published.Add(float64(n))
	return nil
}

// maxRepublish bounds how often one publish sends a chunk again whose
// first copy is gone; past it, the chunk stays queued for the next step.
const maxRepublish = 3

// MsgID names a queued chunk by its queue row: a publish repeated after
// a crash, before the row was removed, is dropped by JetStream within its
// dedupe window while its first copy is still in INGEST (and sent again
// as bf:<id>:r<n> when it is not), while the same chunk owed again later
// (a retry, another pass) is a new row and a new message.
func MsgID(o generation.Owed) string { return messages.BackfillMsgID(o.ID) }

// plan queues the next page generation gen owes.
func (p *Planner) plan(ctx context.Context, gen int) (generation.Plan, error) {
	var plan generation.Plan
	err := pgx.BeginFunc(ctx, p.pool, func(tx pgx.Tx) error {
		var err error
		plan, err = generation.PlanPage(ctx, tx, gen, p.cfg.Page)
		return err
	})
	if err == nil && plan.Queued > 0 {
		p.planned.WithLabelValues(strconv.Itoa(gen)).Add(float64(plan.Queued))
		p.log.Debug().Int("generation", gen).Int("pass", plan.Pass).Int("queued", plan.Queued).Bool("scanned", plan.Scanned).Msg("backfill page planned")
	}
	return plan, err
}

// check looks at a generation while its backfill is idle (nothing
// queued, nothing outstanding): another pass if something stored is
// still owed, ready if a building one is complete. moved says it did
// either, or that the generation's pass is still under way.
func (p *Planner) check(ctx context.Context, g generation.Generation) (moved bool, err error) {
	st, err := generation.StateOf(ctx, p.pool, g.ID)
	if err != nil {
		return false, err
	}
	if st.Pass == 0 || !st.Scanned {
		return true, nil // the scan goes on with the next steps
	}
	owes, err := generation.OwesStored(ctx, p.pool, g.ID, time.Time{})
	if err != nil {
		return false, err
	}
	if owes {
		p.log.Info().Int("generation", g.ID).Int("pass", st.Pass+1).Msg("generation still owes stored chunks: another backfill pass")
		return true, generation.NewPass(ctx, p.pool, g.ID)
	}
	if g.Status != generation.Building {
		return false, nil
	}
	prog, err := generation.ProgressOf(ctx, p.pool, g)
	if err != nil || !prog.Complete() {
		return false, err
	}
	ok, err := generation.MarkReady(ctx, p.pool, g.ID, prog)
	if ok {
		p.log.Info().Int("generation", g.ID).Int64("stored", prog.Stored).Msg("index generation complete: ready to activate")
	}
	return ok, err
}
