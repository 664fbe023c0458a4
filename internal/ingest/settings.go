package ingest

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluicehq/sluice/internal/content/compliance"
	"github.com/sluicehq/sluice/internal/ingest/pipeline"
	"github.com/sluicehq/sluice/internal/platform/config"
	"github.com/sluicehq/sluice/internal/platform/crashpoint"
	"github.com/sluicehq/sluice/internal/platform/policy"
	"github.com/sluicehq/sluice/internal/platform/service"
	"github.com/sluicehq/sluice/internal/provider/embedder"
	"github.com/sluicehq/sluice/internal/provider/fleetbudget"
	"github.com/sluicehq/sluice/internal/provider/tokens"
	"github.com/sluicehq/sluice/internal/store/bulk"
	"github.com/sluicehq/sluice/internal/store/generation"
	"github.com/sluicehq/sluice/pkg/classify"
	"github.com/sluicehq/sluice/pkg/vectorstore"
)

// Config are the settings of the ingest pipeline, shared by the
// consumer and the replayer, which must agree on them.
type Config struct {
	Common           config.Common
	Embedder         embedder.Settings
	MaxDeliveries    int
	AmbiguousRetries int
	MaxReplays       int
	EmbedMaxInputs   int
	// EmbedMaxTokens and MaxInputTokens are the request token cap and the
	// model's context length. Default to tokens.DefaultMaxRequestTokens
	// and tokens.DefaultMaxInputTokens.
	EmbedMaxTokens, MaxInputTokens int
	ParkRetryDelay                 time.Duration
	SoftTimeLimit                  time.Duration
	AllowSources                   string
	PolicyRules                    string
	// BackoffBase and BackoffMax space redeliveries of transient
	// failures. Default to classify.DefaultBackoffBase and
	// pipeline.DefaultBackoffMax.
	BackoffBase, BackoffMax time.Duration
	// HaltRejectionRatio and HaltMinChunks halt a run whose parked share
	// of settled chunks crosses the ratio. Default to 0 (never) and
	// pipeline.DefaultHaltMinChunks.
	HaltRejectionRatio float64
	HaltMinChunks      int
	// RequestsPerMinute and TokensPerMinute are the embedder's rate
	// budget. Default to 0: unlimited.
	RequestsPerMinute, TokensPerMinute int
	// BudgetKey names the fleet budget the process draws on: every
	// process with the same key shares RequestsPerMinute and
	// TokensPerMinute (package fleetbudget). Defaults to a fingerprint
	// of the embedder's URL and API key.
	BudgetKey string
	// HoldDelay spaces deliveries of a halted run's jobs. Defaults to
	// pipeline.DefaultHoldDelay.
	HoldDelay time.Duration
	// PolicyFile is the per-source policy (see package policy). Defaults
	// to none: these settings apply to every source.
	PolicyFile string
	// PayloadRetention, EscalationRetention and RetentionMandate are the
	// retention defaults; the dlq-replayer registers them, other services
	// take the policy package's defaults.
	PayloadRetention, EscalationRetention, RetentionMandate time.Duration

	// BulkMaxAge and BulkInterval are bulk mode's: how long a batch
	// takes members before it is sent, and the pace of the builder and
	// poller. Only the consumer registers them (RegisterBulk): it alone
	// admits jobs to the ledger and runs its builder and poller.
	BulkMaxAge, BulkInterval time.Duration

	table *policy.Table
	// backfill is set by Build: see Backfill.
	backfill func(context.Context, int) (*pipeline.Pipeline, error)
	// bulkOn is set by RegisterBulk; bulk by Build: see Bulk.
	bulkOn bool
	bulk   *Bulk
}

// Bulk is bulk mode as Build set it up: the ledger's configuration and
// collaborators, shared by the pipeline's admission and the builder and
// poller the consumer runs.
type Bulk struct {
	Config bulk.Config
	Deps   bulk.Deps
	ledger *bulk.Ledger
}

// Bulk returns, once Build has run, bulk mode's setup, or nil when no
// source's policy says mode batch or the service does not admit to the
// ledger.
func (c *Config) Bulk() *Bulk { return c.bulk }

// RegisterBulk registers bulk mode's settings on l: the service admits
// the jobs of bulk-mode sources to the ledger.
func (c *Config) RegisterBulk(l *config.Loader) {
	c.bulkOn = true
	l.Duration(&c.BulkMaxAge, "bulk-max-age", "BULK_MAX_AGE", bulk.DefaultMaxAge, "longest a bulk batch takes members before it is sent however full it is")
	l.Duration(&c.BulkInterval, "bulk-interval", "BULK_INTERVAL", bulk.DefaultInterval, "pace of the bulk builder, which sends sealed batches, and of the poller, which follows them")
}

// setUpBulk builds bulk mode's ledger when the service admits to it (a
// source in bulk mode, or a later generation created in bulk mode, may
// come at any time); nil otherwise.
func (c *Config) setUpBulk(rt *service.Runtime, counter tokens.Counter, crash func(string)) (*bulk.Ledger, error) {
	if !c.bulkOn {
		return nil, nil
	}
	encoding := bulk.DefaultEncoding
	if c.Embedder.Encoding == embedder.EncodingFloat {
		encoding = embedder.EncodingFloat
	}
	cfg := bulk.Config{Model: c.Embedder.Model, Dims: c.Common.EmbeddingDims, Encoding: encoding,
		MaxAge: c.BulkMaxAge, Interval: c.BulkInterval, Counter: counter, Spaces: generationSpaces(rt)}
	cfg.Limits.MaxRequestTokens = c.EmbedMaxTokens
	deps := bulk.Deps{Log: &rt.Log, Metrics: bulk.NewMetrics(rt.Registry),
		Crash: func(point string) error { crash("bulk-" + point); return nil }}
	ledger, err := bulk.NewLedger(cfg, deps)
	if err != nil {
		return nil, service.UsageError(err)
	}
	c.bulk = &Bulk{Config: cfg, Deps: deps, ledger: ledger}
	return ledger, nil
}

// generationSpaces answers a later generation's model and dimension
// from the registry.
func generationSpaces(rt *service.Runtime) func(context.Context, int) (bulk.Space, error) {
	return func(ctx context.Context, gen int) (bulk.Space, error) {
		g, err := generation.Get(ctx, rt.Pool, gen)
		if err != nil {
			return bulk.Space{}, err
		}
		return bulk.Space{Model: g.Model, Dims: g.Dims, Counter: tokens.Select(g.Model, rt.Log)}, nil
	}
}

// Backfill returns, once Build has run, the pipelines of later index
// generations (package backfill's Pipelines): each bound to its
// generation's store, model and dimension, sharing the live pipeline's
// settings, policy, metrics and fleet budget.
func (c *Config) Backfill() func(context.Context, int) (*pipeline.Pipeline, error) { return c.backfill }

// generationPipelines builds a later generation's pipeline on first
// use, and answers nil for a generation that is dropped or unknown.
func (c *Config) generationPipelines(rt *service.Runtime, settings embedder.Settings, budget *embedder.Budget,
	pcfg pipeline.Config, deps pipeline.Deps) func(context.Context, int) (*pipeline.Pipeline, error) {
	var mu sync.Mutex
	built := map[int]*pipeline.Pipeline{}
	return func(ctx context.Context, gen int) (*pipeline.Pipeline, error) {
		g, err := generation.Get(ctx, rt.Pool, gen)
		if errors.Is(err, generation.ErrUnknown) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		if g.ID == generation.First || g.Status == generation.Dropped {
			return nil, nil
		}
		mu.Lock()
		defer mu.Unlock()
		if p := built[gen]; p != nil {
			return p, nil
		}
		store, err := vectorstore.OpenGeneration(ctx, rt.Pool, gen, g.Dims)
		if err != nil {
			return nil, err
		}
		counter := tokens.Select(g.Model, rt.Log)
		s := settings
		s.Model = g.Model
		emb, err := NewEmbedder(s, g.Dims, budget, counter, nil, rt)
		if err != nil {
			return nil, err
		}
		cfg, d := pcfg, deps
		cfg.Model = g.Model
		d.Store, d.Embedder, d.Tokens, d.Ledger = store, emb, counter, nil
		if g.Mode == policy.ModeBatch && c.bulk != nil {
			// Its backfill goes through the Batch API, each chunk
			// through the default policy's batch attempts.
			d.Ledger, cfg.BatchAttempts = c.bulk.ledger, c.table.Default().BatchAttempts
		}
		p, err := pipeline.New(cfg, d)
		if err != nil {
			return nil, err
		}
		built[gen] = p
		return p, nil
	}
}

// commitBudget is what a batch's deadline allows for its commits beyond
// the embed stage.
const commitBudget = 30 * time.Second

// Policy loads POLICY_FILE over the settings from flags and environment,
// once; later calls return the same table.
func (c *Config) Policy() (*policy.Table, error) {
	if c.table != nil {
		return c.table, nil
	}
	mandate := cmp.Or(c.RetentionMandate, policy.DefaultRetentionMandate)
	t, err := policy.Load(c.PolicyFile, c.policyDefaults(), mandate)
	if err != nil {
		return nil, err
	}
	c.table = t
	return t, nil
}

// policyDefaults are the settings flags and environment give, which the
// policy file's default section overrides.
func (c *Config) policyDefaults() policy.Settings {
	return policy.Settings{MaxDeliveries: c.MaxDeliveries, AmbiguousRetries: c.AmbiguousRetries, MaxReplays: c.MaxReplays,
		BackoffBase: cmp.Or(c.BackoffBase, classify.DefaultBackoffBase), BackoffMax: cmp.Or(c.BackoffMax, pipeline.DefaultBackoffMax),
		BreakerFailures: c.Embedder.BreakerFailures, BreakerDelay: c.Embedder.BreakerDelay, SoftTimeLimit: c.softTimeLimit(),
		RequestsPerMinute: c.RequestsPerMinute, TokensPerMinute: c.TokensPerMinute,
		HaltRejectionRatio: c.HaltRejectionRatio, HaltMinChunks: cmp.Or(c.HaltMinChunks, pipeline.DefaultHaltMinChunks),
		PayloadRetention: cmp.Or(c.PayloadRetention, policy.DefaultPayloadRetention), EscalationRetention: cmp.Or(c.EscalationRetention, policy.DefaultEscalationRetention)}
}

// softTimeLimit is SOFT_TIME_LIMIT, or when unset the longest one embed
// call may take (every in-process attempt timing out) plus a margin.
func (c *Config) softTimeLimit() time.Duration {
	if c.SoftTimeLimit > 0 {
		return c.SoftTimeLimit
	}
	return embedder.ResilientConfig{Timeout: c.Embedder.Timeout}.WorstCase() + 5*time.Second
}

// BatchDeadline is the deadline of one attempt at a batch: the longest
// soft time limit of any source (a batch's sources embed side by side)
// plus its commits.
func (c *Config) BatchDeadline() time.Duration {
	limit := c.softTimeLimit()
	if c.table != nil {
		limit = c.table.Longest(func(s policy.Settings) time.Duration { return s.SoftTimeLimit })
	}
	return limit + commitBudget
}

// Validate says what is wrong with the pipeline settings and how to fix
// it.
func (c *Config) Validate() error {
	var errs []error
	if err := c.Embedder.Validate(); err != nil {
		errs = append(errs, err)
	}
	if c.BudgetKey != "" {
		if err := (fleetbudget.Config{Key: c.BudgetKey}).Validate(); err != nil {
			errs = append(errs, err)
		}
	}
	if c.SoftTimeLimit < 0 {
		errs = append(errs, fmt.Errorf("SOFT_TIME_LIMIT %s: use a positive duration, or 0 to derive it from EMBEDDER_TIMEOUT", c.SoftTimeLimit))
	}
	if len(errs) == 0 {
		if _, err := c.Policy(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Register registers the pipeline settings on l; metricsAddr is the
// service's default metrics address.
func (c *Config) Register(l *config.Loader, metricsAddr string) {
	config.RegisterCommon(l, &c.Common, metricsAddr)
	c.Embedder.Register(l)
	l.Int(&c.MaxDeliveries, "max-deliveries", "MAX_DELIVERIES", pipeline.DefaultMaxDeliveries, "delivery cap before a transient failure is parked")
	l.Int(&c.AmbiguousRetries, "ambiguous-retries", "AMBIGUOUS_RETRIES", pipeline.DefaultAmbiguousRetries, "retries of an unrecognised error before parking")
	l.Int(&c.MaxReplays, "max-replays", "MAX_REPLAYS", pipeline.DefaultMaxReplays, "replay generations before a chunk is quarantined as replay_exhausted")
	l.Int(&c.EmbedMaxInputs, "embed-max-inputs", "EMBED_MAX_INPUTS", pipeline.DefaultEmbedMaxInputs, "inputs per embedding request")
	l.Int(&c.EmbedMaxTokens, "embed-max-request-tokens", "EMBED_MAX_REQUEST_TOKENS", tokens.DefaultMaxRequestTokens, "input tokens per embedding request, by the model's tokenizer; a larger batch goes out as several requests")
	l.Int(&c.MaxInputTokens, "embed-max-input-tokens", "EMBED_MAX_INPUT_TOKENS", tokens.DefaultMaxInputTokens, "the model's context length: a chunk of more tokens is parked as context_length_exceeded before any request")
	l.Duration(&c.ParkRetryDelay, "park-retry-delay", "PARK_RETRY_DELAY", pipeline.DefaultParkRetryDelay, "delay before the replayer retries a transient_exhausted chunk")
	l.Duration(&c.SoftTimeLimit, "soft-time-limit", "SOFT_TIME_LIMIT", 0, "bound of one batch's embed stage; work that keeps hitting it is parked as timeout_exhausted (0 derives it from EMBEDDER_TIMEOUT and in-process retries)")
	l.String(&c.AllowSources, "allow-sources", "POLICY_ALLOW_SOURCES", "", "comma-separated source allow-list (empty allows all)")
	l.String(&c.PolicyRules, "policy-rules", "POLICY_RULES", "", "extra escalation rules, ';'-separated name=regexp")
	l.Duration(&c.BackoffBase, "backoff-base", "BACKOFF_BASE", classify.DefaultBackoffBase, "ceiling of the first redelivery delay of a transient failure (doubles per delivery, full jitter)")
	l.Duration(&c.BackoffMax, "backoff-max", "BACKOFF_MAX", pipeline.DefaultBackoffMax, "ceiling of any redelivery delay")
	l.Int(&c.RequestsPerMinute, "rate-requests-per-minute", "RATE_REQUESTS_PER_MINUTE", 0, "embedder request budget per minute for the whole fleet sharing BUDGET_KEY, adaptive on 429s (0 unlimited)")
	l.Int(&c.TokensPerMinute, "rate-tokens-per-minute", "RATE_TOKENS_PER_MINUTE", 0, "embedder input-token budget per minute for the whole fleet sharing BUDGET_KEY (0 unlimited)")
	l.String(&c.BudgetKey, "budget-key", "BUDGET_KEY", "", "the fleet budget this process draws on, shared by every process with the same key (empty: a fingerprint of EMBEDDER_URL and EMBEDDER_API_KEY)")
	l.Float(&c.HaltRejectionRatio, "halt-rejection-ratio", "HALT_REJECTION_RATIO", 0, "halt a run once this share of its settled chunks is parked (0 never halts)")
	l.Int(&c.HaltMinChunks, "halt-min-chunks", "HALT_MIN_CHUNKS", pipeline.DefaultHaltMinChunks, "settled chunks of a run before its rejection ratio is judged")
	l.Duration(&c.HoldDelay, "hold-delay", "HOLD_DELAY", pipeline.DefaultHoldDelay, "how long a halted run's job waits before it is delivered again (held deliveries spend no budget)")
	l.String(&c.PolicyFile, "policy-file", "POLICY_FILE", "", "per-source policy file (YAML; see deploy/policy.example.yaml); flags and environment give its defaults")
}

// Build creates the embedder and the pipeline on a started runtime, and
// joins the fleet budget. The caller calls leave once it has stopped
// embedding, before it closes the runtime: until then the process keeps
// its share of the fleet budget.
func (c *Config) Build(ctx context.Context, rt *service.Runtime, lookup func(string) (string, bool)) (*pipeline.Pipeline, *embedder.Resilient, func(), error) {
	if err := c.Validate(); err != nil {
		return nil, nil, nil, err
	}
	rules, err := compliance.ParseRules(splitNonEmpty(c.PolicyRules, ";"))
	if err != nil {
		return nil, nil, nil, err
	}
	table, err := c.Policy()
	if err != nil {
		return nil, nil, nil, err
	}
	store, err := vectorstore.Open(ctx, rt.Pool, c.Common.EmbeddingDims)
	if err != nil {
		return nil, nil, nil, err
	}
	def := table.Default()
	// A budget even without allowances: it paces from the provider's
	// rate-limit headers.
	budget := embedder.NewBudget(def.RequestsPerMinute, def.TokensPerMinute, nil, rt.Log)
	budget.CapSources(sourceShares(table))
	counter := tokens.Select(c.Embedder.Model, rt.Log)
	emb, err := NewEmbedder(c.embedderSettings(def), c.Common.EmbeddingDims, budget, counter, rt.Registry, rt)
	if err != nil {
		return nil, nil, nil, err
	}
	pcfg := pipeline.Config{MaxDeliveries: c.MaxDeliveries, AmbiguousRetries: c.AmbiguousRetries,
		MaxReplays: c.MaxReplays, EmbedMaxInputs: c.EmbedMaxInputs, ParkRetryDelay: c.ParkRetryDelay,
		EmbedMaxTokens: c.EmbedMaxTokens, MaxInputTokens: c.MaxInputTokens,
		SoftTimeLimit: c.softTimeLimit(), Backoff: classify.Backoff{Base: c.BackoffBase, Max: c.BackoffMax},
		HaltRejectionRatio: c.HaltRejectionRatio, HaltMinChunks: c.HaltMinChunks, HoldDelay: c.HoldDelay}
	checker, err := Checker(table, rules, splitNonEmpty(c.AllowSources, ","), rt.Registry)
	if err != nil {
		return nil, nil, nil, err
	}
	deps := pipeline.Deps{Pool: rt.Pool, Store: store, Embedder: emb, Sources: table, Compliance: checker,
		Log: rt.Log, Metrics: pipeline.NewMetrics(rt.Registry), Crash: crashpoint.FromEnv(lookup), Tokens: counter}
	ledger, err := c.setUpBulk(rt, counter, deps.Crash)
	if err != nil {
		return nil, nil, nil, err
	}
	if ledger != nil {
		deps.Ledger = ledger
	}
	pipe, err := pipeline.New(pcfg, deps)
	if err != nil {
		return nil, nil, nil, err
	}
	c.backfill = c.generationPipelines(rt, c.embedderSettings(def), budget, pcfg, deps)
	leave, err := c.joinFleet(ctx, rt, budget)
	if err != nil {
		return nil, nil, nil, err
	}
	return pipe, emb, leave, nil
}

// Checker is the compliance stage of a pipeline under table: the
// built-in rules and extra, the source allow-list allowSources (empty
// admits every source), and each source's secrets_allow, whose allowed
// findings are counted on reg. A nil table allows no source anything.
func Checker(table *policy.Table, extra []compliance.Rule, allowSources []string, reg prometheus.Registerer) (*compliance.Checker, error) {
	return compliance.NewChecker(append(compliance.DefaultRules(), extra...), allowSources).
		WithAllowance(compliance.Allowance{BySource: secretsAllowed(table), Allowed: compliance.NewAllowedCounter(reg)})
}

// secretsAllowed is the policy's secrets_allow of each source that has
// its own section; the default section's list is not a source's.
func secretsAllowed(t *policy.Table) map[string][]string {
	out := map[string][]string{}
	if t == nil {
		return out
	}
	for _, s := range t.Sources() {
		if l := t.For(s).SecretsAllow; len(l) > 0 {
			out[s] = l
		}
	}
	return out
}

// sourceShares are the policy's budget_share of each source that has
// one.
func sourceShares(t *policy.Table) map[string]float64 {
	out := map[string]float64{}
	for _, s := range t.Sources() {
		if f := t.For(s).BudgetShare; f < 1 {
			out[s] = f
		}
	}
	return out
}

// budgetKey is BUDGET_KEY, or the fingerprint of the provider's URL and
// API key.
func (c *Config) budgetKey() string {
	return cmp.Or(c.BudgetKey, fleetbudget.Fingerprint(c.Embedder.URL, c.Embedder.APIKey))
}

// joinFleet makes budget this process's share of the fleet budget, and
// keeps it so until leave is called. The heartbeats run on their own
// context, not ctx: when ctx ends the process still finishes its
// in-flight batches at its share, and must keep holding it meanwhile.
// leave stops the heartbeats, waits for them, and deletes the entry.
func (c *Config) joinFleet(ctx context.Context, rt *service.Runtime, budget *embedder.Budget) (func(), error) {
	m, err := fleetbudget.New(fleetbudget.Config{Key: c.budgetKey(), Service: rt.Name},
		fleetbudget.Deps{JS: rt.JS, Budget: budget, Log: rt.Log, Registry: rt.Registry})
	if err != nil {
		return nil, service.UsageError(err)
	}
	if err := m.Join(ctx); err != nil {
		return nil, err
	}
	hbCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() {
		defer close(done)
		m.Run(hbCtx)
	}()
	rt.Log.Info().Str("budget_key", c.budgetKey()).Str("member", m.ID()).Float64("share", budget.Share()).Msg("joined the fleet budget")
	return func() {
		stop()
		<-done
		lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		defer cancel()
		if err := m.Leave(lctx); err != nil {
			rt.Log.Warn().Err(err).Msg("the entry expires instead")
		}
	}, nil
}

// embedderSettings are the embedder settings with the policy's
// embedder-wide values (breaker) applied.
func (c *Config) embedderSettings(def policy.Settings) embedder.Settings {
	e := c.Embedder
	e.BreakerFailures, e.BreakerDelay = def.BreakerFailures, def.BreakerDelay
	return e
}

// NewEmbedder builds the OpenAI client behind failsafe-go policies, paced
// by budget (nil for none) in tokens counted by counter and from the
// provider's rate-limit headers, and exports the breaker state as
// sluice_circuit_breaker_state.
func NewEmbedder(cfg embedder.Settings, dims int, budget *embedder.Budget, counter tokens.Counter, reg prometheus.Registerer, rt *service.Runtime) (*embedder.Resilient, error) {
	ecfg := cfg.Client(cfg.Model, dims)
	if budget != nil {
		ecfg.OnRateLimits = budget.Observe
	}
	client, err := embedder.NewOpenAI(ecfg)
	if err != nil {
		return nil, err
	}
	state := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "sluice_circuit_breaker_state",
		Help: "Embedder circuit breaker: 0 closed, 1 half-open, 2 open.",
	})
	if reg != nil {
		reg.MustRegister(state)
	}
	return embedder.NewResilient(client, embedder.ResilientConfig{
		Timeout: cfg.Timeout, BreakerDelay: cfg.BreakerDelay, FailureThreshold: uint(cfg.BreakerFailures), Budget: budget, Tokens: counter,
		OnStateChange: func(from, to string) {
			state.Set(map[string]float64{"closed": 0, "half-open": 1, "open": 2}[to])
			rt.Log.Warn().Str("from", from).Str("to", to).Msg("embedder circuit breaker")
		},
	})
}

func splitNonEmpty(s, sep string) []string {
	var out []string
	for _, p := range strings.Split(s, sep) {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
