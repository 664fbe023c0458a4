package pipeline

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/sluicehq/sluice/internal/content/compliance"
	"github.com/sluicehq/sluice/internal/platform/policy"
	"github.com/sluicehq/sluice/internal/provider/embedder"
	"github.com/sluicehq/sluice/internal/provider/tokens"
	"github.com/sluicehq/sluice/internal/store/generation"
	"github.com/sluicehq/sluice/pkg/classify"
	"github.com/sluicehq/sluice/pkg/messages"
	"github.com/sluicehq/sluice/pkg/vectorstore"
)

// Embedder is the embedding API as the pipeline uses it.
type Embedder interface {
	Embed(ctx context.Context, inputs []string) ([][]float32, error)
	Model() string
	Dims() int
}

// Pipeline processes batches of chunk jobs. It is safe for concurrent use.
type Pipeline struct {
	cfg        Config
	pool       *pgxpool.Pool
	store      vectorstore.Store
	emb        Embedder
	compliance *compliance.Checker
	sources    *policy.Table
	log        zerolog.Logger
	metrics    *Metrics
	now        func() time.Time
	crash      func(point string)
	// rejections sizes embedding requests to how often the embedder
	// rejects an input.
	rejections rejectionRate
	tokens     tokens.Counter
	// gen is the index generation of the store.
	gen int
	// flights are the texts this pipeline's batches are embedding now.
	flights flights
	// claimOwner names this pipeline's claims on texts (claims.go), and
	// lastClaimSweep is when it last swept expired ones, in Unix
	// nanoseconds by now.
	claimOwner     string
	lastClaimSweep atomic.Int64
	// batchesWithoutRepeats counts this pipeline's batches since the last
	// that met a repeated text (noteRepeats).
	batchesWithoutRepeats atomic.Int64
	// ledger holds the chunks of bulk-mode sources; nil embeds every
	// source live.
	ledger Ledger
	// reused, providerInputs and providerTokens are the metrics' series
	// of the store's index generation.
	reused, providerInputs, providerTokens prometheus.Counter
}

// Deps are the pipeline's collaborators.
type Deps struct {
	Pool     *pgxpool.Pool
	Store    vectorstore.Store
	Embedder Embedder
	// Compliance is the compliance stage; nil admits everything.
	Compliance *compliance.Checker
	// Sources is the per-source policy; nil applies Config to every
	// source.
	Sources *policy.Table
	Log     zerolog.Logger
	// Metrics defaults to unregistered metrics.
	Metrics *Metrics
	// Now defaults to time.Now.
	Now func() time.Time
	// Crash is called at named crash points (see package crashpoint); nil
	// for none.
	Crash func(point string)
	// Tokens counts the model's tokens for Config.MaxInputTokens and
	// Config.EmbedMaxTokens. Defaults to tokens.ForModel(Config.Model).
	Tokens tokens.Counter
	// Ledger is bulk mode's ledger: the jobs of a source whose policy
	// says mode batch are admitted to it rather than embedded. Nil embeds
	// every source live.
	Ledger Ledger
}

// New returns a pipeline.
func New(cfg Config, deps Deps) (*Pipeline, error) {
	cfg.applyDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if deps.Pool == nil || deps.Store == nil || deps.Embedder == nil {
		return nil, errors.New("pipeline: pool, store and embedder are required")
	}
	if deps.Embedder.Dims() != 0 && deps.Embedder.Dims() != deps.Store.Dims() {
		return nil, fmt.Errorf("pipeline: embedder returns %d dimensions but the store holds %d: set EMBEDDING_DIMS to the model's size", deps.Embedder.Dims(), deps.Store.Dims())
	}
	if cfg.Model == "" {
		cfg.Model = deps.Embedder.Model()
	}
	p := &Pipeline{cfg: cfg, pool: deps.Pool, store: deps.Store, emb: deps.Embedder, compliance: deps.Compliance,
		sources: deps.Sources, log: deps.Log, metrics: deps.Metrics, now: deps.Now, crash: deps.Crash, tokens: deps.Tokens,
		ledger: deps.Ledger, claimOwner: newClaimOwner()}
	if p.tokens == nil {
		p.tokens, _ = tokens.ForModel(cfg.Model)
	}
	if p.metrics == nil {
		p.metrics = NewMetrics(nil)
	}
	if p.now == nil {
		p.now = time.Now
	}
	p.gen = generation.First
	if r, ok := p.store.(vectorstore.Reuser); ok {
		p.gen = r.Generation()
	}
	p.bindGeneration(p.gen)
	if p.crash == nil {
		p.crash = func(string) {}
	}
	return p, nil
}

// bindGeneration points the per-generation series at generation gen's.
func (p *Pipeline) bindGeneration(gen int) {
	label := strconv.Itoa(gen)
	p.reused = p.metrics.Reuse.WithLabelValues(label)
	p.providerInputs = p.metrics.ProviderInputs.WithLabelValues(label)
	p.providerTokens = p.metrics.ProviderTokens.WithLabelValues(label)
}

// Process decides and commits an outcome for every job. It returns an
// error only when the database could not answer what the decisions need
// (the manifest's states, the stored vectors of the batch's texts) or
// could not commit what was decided; then no job may be acknowledged,
// and every job whose outcome is still Undecided must be retried by
// redelivery.
func (p *Pipeline) Process(ctx context.Context, jobs []*Job) error {
	live := p.decode(jobs)
	live, err := p.screen(ctx, live)
	if err != nil {
		return p.undecide(jobs, err)
	}
	live = p.applyPolicy(live)
	toStore, forget, err := p.vectors(ctx, live)
	defer forget()
	if err != nil {
		return p.undecide(jobs, err)
	}
	if err := p.storeAll(ctx, toStore); err != nil {
		return p.undecide(jobs, err)
	}
	if err := p.parkAll(ctx, jobs); err != nil {
		return p.undecide(jobs, err)
	}
	p.judgeRuns(ctx, jobs)
	p.countOutcomes(jobs)
	return nil
}

// vectors gives each live job a vector, reused or embedded, or a
// failure, and returns those with a vector, to store. The texts it
// embedded stay shared with the process's other batches, and claimed
// against other processes, until the caller, once it has committed them
// or given up, calls forget. It fails only when the store could not be
// asked for the vectors it holds or the texts it needs claimed.
func (p *Pipeline) vectors(ctx context.Context, live []*Job) (toStore []*Job, forget func(), err error) {
	forget = func() {}
	send, tw, err := p.reuse(ctx, live)
	if err != nil {
		return nil, forget, err
	}
	repeated := len(send) < len(live)
	if send, err = p.admit(ctx, send, tw); err != nil {
		return nil, forget, err
	}
	mine, elsewhere, claimed, err := p.claimAcross(ctx, send, repeated)
	if err != nil {
		return nil, forget, err
	}
	own, waiting := p.flights.claim(mine)
	p.noteRepeats(repeated || len(mine) < len(send) || len(waiting) > 0)
	var takenOver []*Job
	forget = func() {
		p.flights.forget(own)
		if claimed {
			p.releaseClaims(ctx, slices.Concat(mine, takenOver))
		}
	}
	func() {
		defer p.flights.land(own)
		p.embedBySource(ctx, own)
	}()
	again := p.await(ctx, waiting)
	takenOver = p.awaitElsewhere(ctx, elsewhere)
	if again = append(again, takenOver...); len(again) > 0 {
		p.embedBySource(ctx, again)
	}
	p.share(tw)
	for _, j := range live {
		if j.Outcome == Undecided {
			toStore = append(toStore, j)
		}
	}
	return toStore, forget, nil
}

// countOutcomes counts a processed batch's outcomes and retries.
func (p *Pipeline) countOutcomes(jobs []*Job) {
	for _, j := range jobs {
		p.metrics.Outcomes.WithLabelValues(j.Outcome.String()).Inc()
		if j.Outcome == Retry && j.Failure != nil {
			p.metrics.Retries.WithLabelValues(j.Failure.Decision.Class).Inc()
		}
	}
}

// embedBySource embeds each source's jobs side by side, each under its
// source's soft time limit, so that a batch's deadline is the longest
// limit rather than their sum.
func (p *Pipeline) embedBySource(ctx context.Context, jobs []*Job) {
	groups := map[string][]*Job{}
	var order []string
	for _, j := range jobs {
		src := j.chunk.SourceID
		if _, ok := groups[src]; !ok {
			order = append(order, src)
		}
		groups[src] = append(groups[src], j)
	}
	var wg sync.WaitGroup
	for _, src := range order {
		limit := p.budget(src).softTimeLimit
		wg.Go(func() {
			embedCtx, cancel := context.WithTimeoutCause(ctx, limit, fmt.Errorf("%w of %s", errSoftTimeLimit, limit))
			defer cancel()
			embedCtx = embedder.WithSource(embedCtx, src)
			p.embed(embedCtx, groups[src])
		})
	}
	wg.Wait()
}

// errSoftTimeLimit is the cause of an embed stage cut off by the soft
// time limit.
var errSoftTimeLimit = errors.New("soft time limit")

// undecide reverts outcomes that were not committed, so the caller naks.
func (p *Pipeline) undecide(jobs []*Job, err error) error {
	for _, j := range jobs {
		if j.Outcome == Parked || j.Outcome == Undecided {
			j.Outcome, j.Failure = Undecided, nil
		}
	}
	return err
}

// decode parses every job; an undecodable one is parked as invalid_message.
func (p *Pipeline) decode(jobs []*Job) []*Job {
	live := jobs[:0:0]
	for _, j := range jobs {
		chunk, err := messages.DecodeChunkJob(j.Raw)
		if err != nil {
			p.fail(j, StageDecode, classify.Permanent(classify.ClassInvalidMessage, err))
			continue
		}
		j.chunk = chunk
		live = append(live, j)
	}
	return live
}

func (p *Pipeline) applyPolicy(jobs []*Job) []*Job {
	live := jobs[:0]
	for _, j := range jobs {
		if j.chunk.Text == "" || isBlank(j.chunk.Text) {
			p.fail(j, StagePolicy, classify.Permanentf(classify.ClassEmptyText, "chunk %d of %s has no text", j.chunk.ChunkIndex, j.chunk.DocID))
			continue
		}
		if err := p.compliance.Check(&j.chunk); err != nil {
			p.fail(j, StagePolicy, err)
			continue
		}
		live = append(live, j)
	}
	return live
}

func isBlank(s string) bool {
	for _, r := range s {
		if r != ' ' && r != '\n' && r != '\t' && r != '\r' {
			return false
		}
	}
	return true
}

// fail routes a failed job: back for another delivery while its budget
// lasts, parked otherwise (see routeFailure).
func (p *Pipeline) fail(j *Job, stage string, err error) {
	d := classify.Classify(err)
	f := &Failure{Decision: d, Stage: stage, Err: err, ParkedClass: d.Class}
	j.Failure = f
	r := p.route(j, d)
	if r.retry {
		j.Outcome, j.Delay, j.held = Retry, r.delay, r.held
		return
	}
	f.ParkedClass, f.NextRetryAt = r.parkedClass, r.nextRetryAt
	j.Outcome = Parked
}

// route is what failing j with d does: another delivery or parked.
func (p *Pipeline) route(j *Job, d classify.Decision) route {
	return routeFailure(attempt{decision: d, delivered: j.Delivered, finalAttempt: j.FinalAttempt,
		holdOnThrottle: j.HoldOnThrottle, excludesHeld: !j.Replay, replayGen: j.chunk.ReplayGen, budget: p.budget(j.chunk.SourceID),
		parkRetryDelay: p.cfg.ParkRetryDelay, now: p.now()})
}
