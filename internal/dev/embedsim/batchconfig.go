package embedsim

import (
	"errors"
	"fmt"
	"time"
)

// Limits of OpenAI's Batch API, the defaults of BatchConfig.
const (
	// DefaultMaxBatchRequests is the most requests (lines) a batch input
	// file may hold.
	DefaultMaxBatchRequests = 50_000
	// DefaultMaxBatchInputs is the most embedding inputs a /v1/embeddings
	// batch may hold across all its requests.
	DefaultMaxBatchInputs = 50_000
	// DefaultMaxBatchFileBytes is the largest batch input file (200 MB).
	DefaultMaxBatchFileBytes = 200 << 20
	// DefaultMaxUploadBytes is the largest file the Files API accepts
	// (512 MB).
	DefaultMaxUploadBytes = 512 << 20
	// CompletionWindow is the only completion window the API accepts.
	CompletionWindow = "24h"
)

// Default phase durations of a simulated batch: short, so that a demo sees
// a batch through in seconds.
const (
	DefaultBatchValidating = 2 * time.Second
	DefaultBatchInProgress = 10 * time.Second
	DefaultBatchFinalizing = 2 * time.Second
	DefaultBatchCancelling = time.Second
)

// Output orders of a batch's output and error files.
const (
	// OrderInput writes lines in the order of the input file.
	OrderInput = "input"
	// OrderReverse writes them in reverse.
	OrderReverse = "reverse"
	// OrderShuffle writes them in an order drawn from the seed.
	OrderShuffle = "shuffle"
)

// BatchConfig configures the Batch and Files APIs. Its phases run on the
// server's clock (WithClock): a batch moves on when a request finds its
// time has come, so a test that moves the clock sees every state without
// sleeping.
type BatchConfig struct {
	// Validating is how long a batch stays validating. Defaults to
	// DefaultBatchValidating.
	Validating time.Duration
	// InProgress is how long a batch takes to run all its requests, which
	// complete evenly over it, in input order. Defaults to
	// DefaultBatchInProgress.
	InProgress time.Duration
	// Finalizing is how long a batch stays finalizing. Defaults to
	// DefaultBatchFinalizing.
	Finalizing time.Duration
	// Cancelling is how long a cancelled batch stays cancelling. Defaults
	// to DefaultBatchCancelling.
	Cancelling time.Duration
	// Window is the completion window: a batch not finalizing by then
	// expires. Defaults to 24h; requests always say "24h".
	Window time.Duration
	// MaxRequests is the most requests an input file may hold. Defaults to
	// DefaultMaxBatchRequests.
	MaxRequests int
	// MaxInputs is the most embedding inputs a batch may hold across its
	// requests. Defaults to DefaultMaxBatchInputs.
	MaxInputs int
	// MaxFileBytes is the largest batch input file. Defaults to
	// DefaultMaxBatchFileBytes.
	MaxFileBytes int64
	// MaxUploadBytes is the largest upload; a larger one is answered 413.
	// Defaults to DefaultMaxUploadBytes.
	MaxUploadBytes int64
	// EnqueuedTokens is the organisation's enqueued-token quota for
	// batches, separate from Quota: the input tokens of every batch
	// validating, in progress or finalizing together. A batch that would
	// go past it fails at validating with token_limit_exceeded. Defaults
	// to 0: unlimited.
	EnqueuedTokens int
	// OutputOrder is the order of lines in output and error files:
	// OrderInput, OrderReverse or OrderShuffle. The provider promises no
	// order. Defaults to OrderInput.
	OutputOrder string
	// Faults scripts batches that go wrong. Defaults to none.
	Faults BatchFaults
}

// BatchFaults scripts what goes wrong with batches. Each rate is drawn
// once per batch, when it is created, from the server's seeded generator;
// Server.SetBatchFaults swaps them while the server runs. Lines fail by the
// live endpoint's rules (Faults.Poison, context length), not by these.
type BatchFaults struct {
	// FailRate is the probability that a batch fails at validating with
	// a server_error, whatever its file holds.
	FailRate float64
	// ExpireRate is the probability that a batch runs at half the pace
	// its window allows: it expires with half its requests done.
	ExpireRate float64
	// LoseRate is the probability that a batch is lost when it leaves
	// validating: from then on it is not found (404) and not listed.
	LoseRate float64
	// SlowFinalize is added to every batch's finalizing phase. Defaults
	// to 0.
	SlowFinalize time.Duration
	// RefuseCreateRate is the probability that a batch create is refused
	// (400) though its input file is there, as a provider that refuses
	// the file's content does: nothing is created.
	RefuseCreateRate float64
}

// Validate reports the first problem with f, saying how to fix it.
func (f BatchFaults) Validate() error {
	for _, r := range []struct {
		name string
		p    float64
	}{{"fail rate", f.FailRate}, {"expire rate", f.ExpireRate}, {"lose rate", f.LoseRate}, {"refuse create rate", f.RefuseCreateRate}} {
		if r.p < 0 || r.p > 1 {
			return fmt.Errorf("batch faults: %s = %v, want a probability in [0, 1]", r.name, r.p)
		}
	}
	if f.SlowFinalize < 0 {
		return errors.New("batch faults: slow finalize must not be negative")
	}
	return nil
}

func (c *BatchConfig) applyDefaults() {
	setDefault(&c.Validating, DefaultBatchValidating)
	setDefault(&c.InProgress, DefaultBatchInProgress)
	setDefault(&c.Finalizing, DefaultBatchFinalizing)
	setDefault(&c.Cancelling, DefaultBatchCancelling)
	setDefault(&c.Window, 24*time.Hour)
	setDefault(&c.MaxRequests, DefaultMaxBatchRequests)
	setDefault(&c.MaxInputs, DefaultMaxBatchInputs)
	setDefault(&c.MaxFileBytes, DefaultMaxBatchFileBytes)
	setDefault(&c.MaxUploadBytes, DefaultMaxUploadBytes)
	setDefault(&c.OutputOrder, OrderInput)
}

func setDefault[T comparable](v *T, def T) {
	var zero T
	if *v == zero {
		*v = def
	}
}

// Validate reports the first problem with c, after defaults, saying how to
// fix it.
func (c BatchConfig) Validate() error {
	c.applyDefaults()
	for _, d := range []struct {
		name string
		d    time.Duration
	}{{"validating", c.Validating}, {"in progress", c.InProgress}, {"finalizing", c.Finalizing}, {"cancelling", c.Cancelling}, {"window", c.Window}} {
		if d.d < 0 {
			return fmt.Errorf("batch: %s phase = %v, want a positive duration, or 0 for the default", d.name, d.d)
		}
	}
	if c.MaxRequests < 0 || c.MaxInputs < 0 || c.MaxFileBytes < 0 || c.MaxUploadBytes < 0 || c.EnqueuedTokens < 0 {
		return errors.New("batch: limits must not be negative (0 means the provider's default; EnqueuedTokens 0 is unlimited)")
	}
	switch c.OutputOrder {
	case OrderInput, OrderReverse, OrderShuffle:
	default:
		return fmt.Errorf("batch: output order %q, want %q, %q or %q", c.OutputOrder, OrderInput, OrderReverse, OrderShuffle)
	}
	return c.Faults.Validate()
}
