package embedder

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/failsafe-go/failsafe-go"
	"github.com/failsafe-go/failsafe-go/circuitbreaker"
	"github.com/failsafe-go/failsafe-go/retrypolicy"
	"github.com/failsafe-go/failsafe-go/timeout"

	"github.com/sluicehq/sluice/internal/platform/wait"
	"github.com/sluicehq/sluice/internal/provider/tokens"
	"github.com/sluicehq/sluice/pkg/classify"
)

// ResilientConfig configures a Resilient. The zero value gives the
// defaults below.
type ResilientConfig struct {
	// Timeout bounds each attempt. Defaults to 30s.
	Timeout time.Duration
	// MaxRetries is how many times a transient failure is retried within
	// one Embed call. Defaults to 2; negative disables retries. Retries
	// here only smooth over blips: longer waits belong to the queue
	// (NakWithDelay), which does not hold a worker.
	MaxRetries int
	// RetryDelay is the ceiling of the first backoff delay, doubling per
	// retry, with full jitter. Defaults to 50ms.
	RetryDelay time.Duration
	// RetryMaxDelay caps the backoff. A Retry-After longer than this is not
	// waited for: Embed returns the error at once so that the caller can
	// requeue the work with that delay. Defaults to 500ms.
	RetryMaxDelay time.Duration
	// FailureThreshold is the number of consecutive transient or ambiguous
	// failures that opens the breaker. Data errors never count. Defaults
	// to 5.
	FailureThreshold uint
	// BreakerDelay is how long the breaker stays open before letting a
	// probe through. Defaults to 10s.
	BreakerDelay time.Duration
	// SuccessThreshold is the number of consecutive successful probes that
	// close a half-open breaker. Defaults to 1.
	SuccessThreshold uint
	// ThrottleMaxWait bounds how long one Embed call waits out 429s in
	// process, the batch keeping its place, instead of returning the
	// error for the caller to requeue: a Retry-After longer than this is
	// returned at once, and retries stop once the call has spent this
	// long. These retries count neither against MaxRetries nor against
	// the breaker: the provider is healthy, only pacing us. Defaults to
	// 10s; negative returns every 429 at once.
	ThrottleMaxWait time.Duration
	// Budget paces requests to the provider's allowance and adapts to its
	// 429s; give the OpenAI client's Config.OnRateLimits its Observe to
	// pace from the provider's headers too. Defaults to nil: unpaced.
	Budget *Budget
	// Tokens counts a request's input tokens for Budget. Defaults to
	// tokens.ForModel of the wrapped Embedder's model.
	Tokens tokens.Counter
	// OnStateChange, if set, is called after each breaker transition with
	// the old and new state ("closed", "open", "half-open"), for a metric or
	// a log line. It must not block. Defaults to nil.
	OnStateChange func(from, to string)
}

// Defaults of ResilientConfig, read by the services' flags too.
const (
	DefaultTimeout          = 30 * time.Second
	DefaultMaxRetries       = 2
	DefaultRetryDelay       = 50 * time.Millisecond
	DefaultRetryMaxDelay    = 500 * time.Millisecond
	DefaultFailureThreshold = 5
	DefaultBreakerDelay     = 10 * time.Second
	DefaultSuccessThreshold = 1
	DefaultThrottleMaxWait  = 10 * time.Second
)

func (o *ResilientConfig) applyDefaults() {
	if o.Timeout == 0 {
		o.Timeout = DefaultTimeout
	}
	switch {
	case o.MaxRetries == 0:
		o.MaxRetries = DefaultMaxRetries
	case o.MaxRetries < 0:
		o.MaxRetries = 0
	}
	if o.RetryDelay == 0 {
		o.RetryDelay = DefaultRetryDelay
	}
	if o.RetryMaxDelay == 0 {
		o.RetryMaxDelay = DefaultRetryMaxDelay
	}
	if o.FailureThreshold == 0 {
		o.FailureThreshold = DefaultFailureThreshold
	}
	if o.BreakerDelay == 0 {
		o.BreakerDelay = DefaultBreakerDelay
	}
	if o.SuccessThreshold == 0 {
		o.SuccessThreshold = DefaultSuccessThreshold
	}
	if o.ThrottleMaxWait == 0 {
		o.ThrottleMaxWait = DefaultThrottleMaxWait
	}
}

// WorstCase is the longest one Embed call can take with these options:
// every attempt running to its timeout, with the longest wait between
// attempts, after the longest wait on 429s.
func (o ResilientConfig) WorstCase() time.Duration {
	o.applyDefaults()
	return time.Duration(o.MaxRetries+1)*o.Timeout + time.Duration(o.MaxRetries)*o.RetryMaxDelay + max(o.ThrottleMaxWait, 0)
}

// Validate reports the first problem with o, saying how to fix it.
func (o ResilientConfig) Validate() error {
	if o.Timeout < 0 || o.RetryDelay < 0 || o.RetryMaxDelay < 0 || o.BreakerDelay < 0 {
		return errors.New("embedder: resilient durations must not be negative (0 means the default)")
	}
	if o.RetryDelay > 0 && o.RetryMaxDelay > 0 && o.RetryMaxDelay < o.RetryDelay {
		return fmt.Errorf("embedder: RetryMaxDelay %v is below RetryDelay %v", o.RetryMaxDelay, o.RetryDelay)
	}
	return nil
}

// Resilient wraps an Embedder with a per-attempt timeout, a small retry
// budget for transient faults and a circuit breaker. It is an Embedder
// itself, and safe for concurrent use.
//
// Only transient faults are retried here, and only when the wait is short;
// everything else is returned at once for the caller to classify. The
// breaker counts transient and ambiguous failures, never data errors (a 4xx
// other than 408/425/429, an *InputError): a run of bad chunks says nothing
// about the provider's health. While the breaker is open, Embed fails fast
// with a retryable classify.ClassCircuitOpen error whose RetryAfter is the
// time left, and consumers should stop pulling work: see WaitReady.
type Resilient struct {
	inner    Embedder
	opts     ResilientConfig
	breaker  circuitbreaker.CircuitBreaker[[][]float32]
	executor failsafe.Executor[[][]float32]
	// probing is held by the one WaitReady call that probes a half-open
	// breaker; the others wait for its outcome.
	probing chan struct{}
}

var _ Embedder = (*Resilient)(nil)

// NewResilient wraps inner, after applying defaults to opts and validating
// them.
func NewResilient(inner Embedder, opts ResilientConfig) (*Resilient, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	opts.applyDefaults()
	if opts.Tokens == nil {
		opts.Tokens, _ = tokens.ForModel(inner.Model())
	}
	r := &Resilient{inner: inner, opts: opts, probing: make(chan struct{}, 1)}

	backoff := classify.Backoff{Base: opts.RetryDelay, Max: opts.RetryMaxDelay}
	retry := retrypolicy.NewBuilder[[][]float32]().
		HandleIf(func(_ [][]float32, err error) bool { return r.retryable(err) }).
		WithMaxRetries(opts.MaxRetries).
		WithDelayFunc(func(exec failsafe.ExecutionAttempt[[][]float32]) time.Duration {
			return backoff.DelayAtLeast(exec.Retries()+1, classify.Classify(exec.LastError()).RetryAfter)
		}).
		ReturnLastFailure().
		Build()

	cb := circuitbreaker.NewBuilder[[][]float32]().
		HandleIf(func(_ [][]float32, err error) bool { return countsAgainstBreaker(err) }).
		WithFailureThreshold(opts.FailureThreshold).
		WithSuccessThreshold(opts.SuccessThreshold).
		WithDelay(opts.BreakerDelay)
	if opts.OnStateChange != nil {
		cb = cb.OnStateChanged(func(e circuitbreaker.StateChangedEvent) {
			opts.OnStateChange(e.OldState.String(), e.NewState.String())
		})
	}
	r.breaker = cb.Build()

	// The timeout is innermost so that it bounds each attempt, and the
	// breaker sees every attempt, retries included. Throttling is
	// outermost: waiting out a 429 starts the blip budget afresh.
	r.executor = failsafe.With(r.throttleRetry(), retry, r.breaker, timeout.New[[][]float32](opts.Timeout))
	return r, nil
}

// Model returns the wrapped Embedder's model.
func (r *Resilient) Model() string { return r.inner.Model() }

// Dims returns the wrapped Embedder's dimension.
func (r *Resilient) Dims() int { return r.inner.Dims() }

// Embed implements Embedder. Besides the wrapped Embedder's errors it
// returns a retryable classify.ClassCircuitOpen error while the breaker is
// open, and a retryable classify.ClassTimeout error when an attempt times
// out. Once ctx is done it returns an error matching ctx.Err().
func (r *Resilient) Embed(ctx context.Context, inputs []string) ([][]float32, error) {
	if len(inputs) == 0 {
		return [][]float32{}, nil
	}
	n := 0
	if r.opts.Budget != nil && r.opts.Budget.CountsTokens() {
		n = tokens.Sum(r.opts.Tokens, inputs)
	}
	vecs, err := r.executor.WithContext(ctx).GetWithExecution(func(exec failsafe.Execution[[][]float32]) ([][]float32, error) {
		return r.attempt(exec.Context(), inputs, n)
	})
	if err != nil {
		return nil, r.translate(ctx, err)
	}
	return vecs, nil
}

// attempt sends one request when the budget allows, and tells the budget
// how the provider answered.
func (r *Resilient) attempt(ctx context.Context, inputs []string, tokens int) ([][]float32, error) {
	b := r.opts.Budget
	if b == nil {
		return r.inner.Embed(ctx, inputs)
	}
	if err := b.Wait(ctx, tokens); err != nil {
		return nil, err
	}
	vecs, err := r.inner.Embed(ctx, inputs)
	switch {
	case err == nil:
		b.Succeeded()
	case isThrottle(err):
		b.Throttled(classify.Classify(err).RetryAfter)
	}
	return vecs, err
}

// throttleRetry waits out 429s in process: after their Retry-After (or a
// short backoff when they give none), for up to ThrottleMaxWait.
func (r *Resilient) throttleRetry() retrypolicy.RetryPolicy[[][]float32] {
	backoff := classify.Backoff{Base: r.opts.RetryDelay, Max: max(r.opts.RetryMaxDelay, r.opts.RetryDelay)}
	return retrypolicy.NewBuilder[[][]float32]().
		HandleIf(func(_ [][]float32, err error) bool {
			return r.opts.ThrottleMaxWait > 0 && isThrottle(err) && classify.Classify(err).RetryAfter <= r.opts.ThrottleMaxWait
		}).
		WithMaxRetries(-1).
		WithMaxDuration(max(r.opts.ThrottleMaxWait, time.Millisecond)).
		WithDelayFunc(func(exec failsafe.ExecutionAttempt[[][]float32]) time.Duration {
			return backoff.DelayAtLeast(1, classify.Classify(exec.LastError()).RetryAfter)
		}).
		ReturnLastFailure().
		Build()
}

// isThrottle reports whether err is the provider pacing us (a 429).
func isThrottle(err error) bool {
	return err != nil && classify.Classify(err).Class == classify.ClassRateLimited
}

// translate turns failsafe's own errors into classify-typed ones.
func (r *Resilient) translate(ctx context.Context, err error) error {
	switch {
	case ctx.Err() != nil && !errors.Is(err, ctx.Err()):
		return fmt.Errorf("embed: %w (last attempt: %w)", ctx.Err(), err)
	case errors.Is(err, circuitbreaker.ErrOpen):
		return &classify.Error{
			Disposition: classify.Retry,
			Class:       classify.ClassCircuitOpen,
			RetryAfter:  r.breaker.RemainingDelay(),
			Err:         err,
		}
	case errors.Is(err, timeout.ErrExceeded):
		return classify.Retryable(classify.ClassTimeout, fmt.Errorf("embed attempt took longer than %v: %w", r.opts.Timeout, err))
	}
	return err
}

// retryable reports whether err deserves another attempt within this call:
// a transient fault, not the caller giving up, and no Retry-After longer
// than the backoff cap.
func (r *Resilient) retryable(err error) bool {
	if err == nil || errors.Is(err, circuitbreaker.ErrOpen) {
		return false
	}
	if errors.Is(err, timeout.ErrExceeded) {
		return true
	}
	d := classify.Classify(err)
	if d.Class == classify.ClassRateLimited && r.opts.ThrottleMaxWait > 0 {
		return false // the throttle policy owns 429s
	}
	return d.Disposition == classify.Retry && d.Class != classify.ClassCanceled && d.RetryAfter <= r.opts.RetryMaxDelay
}

// countsAgainstBreaker reports whether err says something about the
// provider's health: transient and ambiguous faults do; data errors and the
// caller's own cancellation do not.
func countsAgainstBreaker(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, timeout.ErrExceeded) {
		return true
	}
	d := classify.Classify(err)
	switch d.Disposition {
	case classify.Retry:
		return d.Class != classify.ClassCanceled && d.Class != classify.ClassRateLimited
	case classify.Ambiguous:
		return true
	}
	return false
}

// State returns the breaker's effective state: an open breaker whose delay
// has elapsed reports BreakerHalfOpen, since the next call will be let
// through as a probe.
func (r *Resilient) State() BreakerState {
	switch r.breaker.State() {
	case circuitbreaker.OpenState:
		if r.breaker.RemainingDelay() <= 0 {
			return BreakerHalfOpen
		}
		return BreakerOpen
	case circuitbreaker.HalfOpenState:
		return BreakerHalfOpen
	}
	return BreakerClosed
}

// ProbeInput is the one input of the request WaitReady sends to probe a
// half-open breaker.
const ProbeInput = "sluice breaker probe"

// probeRefusedWait is how long WaitReady waits before probing again when
// another call took the half-open breaker's probe.
const probeRefusedWait = 50 * time.Millisecond

// WaitReady blocks until the breaker is closed, or returns ctx.Err() if
// ctx ends first. While the breaker is open it waits out the breaker's
// delay; once the breaker is half-open it probes the embedder itself,
// with ProbeInput, one caller at a time, until a probe closes the
// breaker. Consumers call it before pulling work: no chunk is ever the
// probe, so an outage, however long, spends no chunk's deliveries on
// finding out that the embedder is still down.
func (r *Resilient) WaitReady(ctx context.Context) error {
	for {
		switch r.State() {
		case BreakerClosed:
			return nil
		case BreakerOpen:
			if !wait.Sleep(ctx, r.breaker.RemainingDelay(), nil) {
				return ctx.Err()
			}
		case BreakerHalfOpen:
			if err := r.probe(ctx); err != nil {
				return err
			}
		}
	}
}

// probe sends the half-open breaker's probe unless another caller is
// sending it, then waits for that caller's outcome. It returns only
// ctx.Err(): the probe's own error shows in the breaker's state.
func (r *Resilient) probe(ctx context.Context) error {
	select {
	case r.probing <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-r.probing }()
	if r.State() != BreakerHalfOpen {
		return nil // the other caller's probe settled it
	}
	_, err := r.Embed(ctx, []string{ProbeInput})
	if errors.Is(err, circuitbreaker.ErrOpen) && r.State() == BreakerHalfOpen {
		// A call in flight took the probe's place; its outcome decides.
		wait.Sleep(ctx, probeRefusedWait, nil)
	}
	return ctx.Err()
}
