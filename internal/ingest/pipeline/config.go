package pipeline

import (
	"errors"
	"fmt"
	"time"

	"github.com/sluicehq/sluice/internal/platform/broker"
	"github.com/sluicehq/sluice/internal/platform/policy"
	"github.com/sluicehq/sluice/internal/provider/tokens"
	"github.com/sluicehq/sluice/pkg/classify"
)

// Config tunes the pipeline.
type Config struct {
	// BatchAttempts, above 0, sends every source's jobs to Deps.Ledger,
	// each chunk through at most that many provider batches before it is
	// embedded live: the pipeline of a generation created in bulk mode.
	// 0 follows each source's policy (Settings.Mode).
	BatchAttempts int
	// MaxDeliveries is the delivery cap: a transient failure on this
	// delivery parks the job as transient_exhausted. It must equal the
	// broker topology's MaxDeliveries. Defaults to 5.
	MaxDeliveries int
	// AmbiguousRetries is how many times an unrecognised error is retried
	// before the job is parked as ambiguous_exhausted. Defaults to 2.
	AmbiguousRetries int
	// MaxReplays is how many replay generations a chunk gets before it is
	// quarantined as replay_exhausted. Defaults to 3.
	MaxReplays int
	// EmbedMaxInputs bounds the inputs of one embedding request. Defaults
	// to 64.
	EmbedMaxInputs int
	// EmbedMaxBytes bounds the summed input size of one embedding request.
	// Defaults to 512 KiB.
	EmbedMaxBytes int
	// EmbedMaxTokens bounds the summed input tokens of one embedding
	// request, counted by Deps.Tokens: a batch past it goes out as several
	// requests. Defaults to tokens.DefaultMaxRequestTokens (300,000).
	EmbedMaxTokens int
	// MaxInputTokens is the model's context length: a chunk of more
	// tokens, counted by Deps.Tokens, is parked as
	// context_length_exceeded before any request is sent. Defaults to
	// tokens.DefaultMaxInputTokens (8,191).
	MaxInputTokens int
	// Backoff spaces redeliveries of transient failures. Defaults to
	// classify.Backoff{Base: classify.DefaultBackoffBase (1s), Max:
	// DefaultBackoffMax (2m)}.
	Backoff classify.Backoff
	// ParkRetryDelay is how long after parking a transient_exhausted chunk
	// the replayer may try it, doubled per replay generation. Defaults to 30s.
	ParkRetryDelay time.Duration
	// SoftTimeLimit bounds the embed stage of one batch, whatever the
	// embedder's own timeout. Work cut off by it fails as soft_time_limit,
	// is retried like any timeout, and once the delivery budget is spent
	// is parked as timeout_exhausted, as exhausted timeouts are: a hung
	// embedder never holds a chunk past its budget. Defaults to
	// DefaultSoftTimeLimit; services derive it from the embedder's timeout
	// and retries (see ingest.Config).
	SoftTimeLimit time.Duration
	// ClaimTTL is how long this pipeline's claim on a text it is
	// embedding holds other processes back from paying for the same text
	// (claims.go), and how long it waits on another process's claim
	// before taking the text over. Longer saves more repeats of slow
	// batches; shorter recovers sooner from a claimer that died. Defaults
	// to DefaultClaimTTL.
	ClaimTTL time.Duration
	// ClaimSweepEvery is how often the pipeline deletes the claims past
	// their time to live, its own and any other process's. Defaults to
	// DefaultClaimSweepEvery.
	ClaimSweepEvery time.Duration
	// HaltRejectionRatio halts a run once the parked share of its settled
	// chunks exceeds it, after HaltMinChunks have settled. Defaults to 0:
	// never halt.
	HaltRejectionRatio float64
	// HaltMinChunks is how many of a run's chunks must settle before its
	// ratio is judged. Defaults to DefaultHaltMinChunks.
	HaltMinChunks int
	// HoldDelay is how long a job of a halted run waits before it is
	// delivered again; held deliveries never spend its budget. Defaults
	// to DefaultHoldDelay.
	HoldDelay time.Duration
	// Model names the embedding model recorded with each vector. Defaults
	// to the embedder's.
	Model string
}

// Defaults of Config, written once: flags and applyDefaults both read them.
const (
	DefaultMaxDeliveries    = broker.DefaultMaxDeliveries
	DefaultAmbiguousRetries = 2
	DefaultMaxReplays       = 3
	DefaultEmbedMaxInputs   = 64
	DefaultEmbedMaxBytes    = 512 << 10
	DefaultParkRetryDelay   = 30 * time.Second
	DefaultSoftTimeLimit    = 2 * time.Minute
	// DefaultClaimTTL outlasts a healthy batch's embedding and commit,
	// and ends before a message a dead claimer held is redelivered after
	// the default ACK_WAIT (60s).
	DefaultClaimTTL = 15 * time.Second
	// DefaultClaimSweepEvery keeps a claim whose release failed at most
	// a minute past its time to live.
	DefaultClaimSweepEvery = time.Minute
	// DefaultBackoffMax caps a redelivery's delay: shorter than
	// classify.DefaultBackoffMax, because a chunk waiting in INGEST holds
	// its run open.
	DefaultBackoffMax = 2 * time.Minute
	// DefaultHaltMinChunks is policy.DefaultHaltMinChunks.
	DefaultHaltMinChunks = policy.DefaultHaltMinChunks
	// DefaultHoldDelay spaces the deliveries of a halted run's jobs.
	DefaultHoldDelay = 30 * time.Second
)

func (c *Config) applyDefaults() {
	if c.MaxDeliveries == 0 {
		c.MaxDeliveries = DefaultMaxDeliveries
	}
	if c.AmbiguousRetries == 0 {
		c.AmbiguousRetries = DefaultAmbiguousRetries
	}
	if c.MaxReplays == 0 {
		c.MaxReplays = DefaultMaxReplays
	}
	if c.EmbedMaxInputs == 0 {
		c.EmbedMaxInputs = DefaultEmbedMaxInputs
	}
	if c.EmbedMaxBytes == 0 {
		c.EmbedMaxBytes = DefaultEmbedMaxBytes
	}
	if c.EmbedMaxTokens == 0 {
		c.EmbedMaxTokens = tokens.DefaultMaxRequestTokens
	}
	if c.MaxInputTokens == 0 {
		c.MaxInputTokens = tokens.DefaultMaxInputTokens
	}
	if c.SoftTimeLimit == 0 {
		c.SoftTimeLimit = DefaultSoftTimeLimit
	}
	if c.ClaimTTL == 0 {
		c.ClaimTTL = DefaultClaimTTL
	}
	if c.ClaimSweepEvery == 0 {
		c.ClaimSweepEvery = DefaultClaimSweepEvery
	}
	if c.Backoff.Base == 0 {
		c.Backoff.Base = classify.DefaultBackoffBase
	}
	if c.Backoff.Max == 0 {
		c.Backoff.Max = DefaultBackoffMax
	}
	if c.ParkRetryDelay == 0 {
		c.ParkRetryDelay = DefaultParkRetryDelay
	}
	if c.HaltMinChunks == 0 {
		c.HaltMinChunks = DefaultHaltMinChunks
	}
	if c.HoldDelay == 0 {
		c.HoldDelay = DefaultHoldDelay
	}
}

// Validate reports settings that would break the guarantees.
func (c Config) Validate() error {
	c.applyDefaults()
	var errs []error
	if c.MaxDeliveries < 1 {
		errs = append(errs, fmt.Errorf("max deliveries %d: use at least 1", c.MaxDeliveries))
	}
	if c.AmbiguousRetries < 0 || c.AmbiguousRetries >= c.MaxDeliveries {
		errs = append(errs, fmt.Errorf("ambiguous retries %d: use 0..%d (below max deliveries)", c.AmbiguousRetries, c.MaxDeliveries-1))
	}
	if c.EmbedMaxInputs < 1 || c.EmbedMaxBytes < 1 {
		errs = append(errs, errors.New("embed request bounds must be positive"))
	}
	if c.EmbedMaxTokens < c.MaxInputTokens || c.MaxInputTokens < 1 {
		errs = append(errs, fmt.Errorf("embed max tokens %d, max input tokens %d: use a positive context length and a request cap at least as large (OpenAI's are %d and %d)",
			c.EmbedMaxTokens, c.MaxInputTokens, tokens.DefaultMaxInputTokens, tokens.DefaultMaxRequestTokens))
	}
	if c.ClaimTTL < 0 {
		errs = append(errs, fmt.Errorf("claim time to live %s: use a positive duration", c.ClaimTTL))
	}
	if c.ClaimSweepEvery < 0 {
		errs = append(errs, fmt.Errorf("claim sweep interval %s: use a positive duration", c.ClaimSweepEvery))
	}
	if c.SoftTimeLimit < 0 {
		errs = append(errs, fmt.Errorf("soft time limit %s: use a positive duration", c.SoftTimeLimit))
	}
	if !(c.HaltRejectionRatio >= 0 && c.HaltRejectionRatio < 1) || c.HaltMinChunks < 1 || c.HoldDelay < 0 {
		errs = append(errs, fmt.Errorf("halt rejection ratio %g, min chunks %d, hold delay %s: use a ratio in [0, 1) (0 never halts), at least 1 chunk and a positive delay",
			c.HaltRejectionRatio, c.HaltMinChunks, c.HoldDelay))
	}
	return errors.Join(errs...)
}
