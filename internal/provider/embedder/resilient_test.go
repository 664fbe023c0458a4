package embedder_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/dev/embedsim"
	"github.com/sluicehq/sluice/internal/provider/embedder"
	"github.com/sluicehq/sluice/pkg/classify"
)

type resilientBundle struct {
	sim         *embedsim.Server
	resilient   *embedder.Resilient
	mu          sync.Mutex
	transitions []string
}

func (b *resilientBundle) Transitions() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.transitions)
}

func setupResilient(t *testing.T, faults embedsim.Faults, opts embedder.ResilientConfig) *resilientBundle {
	t.Helper()
	b := &resilientBundle{sim: embedsim.StartTest(t, embedsim.Config{Dims: 8, Faults: faults})}
	opts.OnStateChange = func(from, to string) {
		b.mu.Lock()
		defer b.mu.Unlock()
		b.transitions = append(b.transitions, from+"->"+to)
	}
	client := newOpenAI(t, embedder.Config{URL: b.sim.URL(), Model: "m", Dims: 8})
	r, err := embedder.NewResilient(client, opts)
	if err != nil {
		t.Fatal(err)
	}
	b.resilient = r
	return b
}

func (b *resilientBundle) embed(inputs ...string) error {
	_, err := b.resilient.Embed(context.Background(), inputs)
	return err
}

func TestResilientRetriesWithinBudget(t *testing.T) {
	t.Parallel()
	b := setupResilient(t, embedsim.Faults{Sequences: []embedsim.SequenceRule{{Match: "flaky", Sequence: "503,503,200"}}},
		embedder.ResilientConfig{RetryDelay: time.Millisecond, RetryMaxDelay: 5 * time.Millisecond})
	vecs, err := b.resilient.Embed(context.Background(), []string{"flaky input", "steady"})
	if err != nil {
		t.Fatalf("503,503,200 with 2 retries: %v", err)
	}
	if len(vecs) != 2 || b.sim.SeenCount("flaky input") != 3 {
		t.Errorf("got %d vectors after %d requests, want 2 after 3", len(vecs), b.sim.SeenCount("flaky input"))
	}
}

func TestResilientGivesUpAfterBudget(t *testing.T) {
	t.Parallel()
	b := setupResilient(t, embedsim.Faults{Sequences: []embedsim.SequenceRule{{Match: "x", Sequence: "502"}}},
		embedder.ResilientConfig{RetryDelay: time.Millisecond, RetryMaxDelay: 5 * time.Millisecond})
	err := b.embed("x")
	if se := statusErr(t, err); se.StatusCode != 502 || !classify.IsRetryable(err) {
		t.Errorf("err %v, want the last 502, retryable", err)
	}
	if n := b.sim.SeenCount("x"); n != 3 {
		t.Errorf("%d attempts, want 3", n)
	}
}

func TestResilientLeavesLongRetryAfterToTheQueue(t *testing.T) {
	t.Parallel()
	b := setupResilient(t, embedsim.Faults{Rate429: 1, RetryAfterSeconds: 30}, embedder.ResilientConfig{})
	start := time.Now()
	err := b.embed("x")
	if se := statusErr(t, err); se.RetryAfter != 30*time.Second {
		t.Errorf("RetryAfter %v, want 30s passed through", se.RetryAfter)
	}
	if d := classify.Classify(err); d.RetryAfter != 30*time.Second {
		t.Errorf("classified RetryAfter %v", d.RetryAfter)
	}
	if n := b.sim.Counts().Requests; n != 1 {
		t.Errorf("%d attempts, want 1: a long Retry-After is not waited for in process", n)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("took %v", d)
	}
}

func TestResilientDoesNotRetryDataErrors(t *testing.T) {
	t.Parallel()
	b := setupResilient(t, embedsim.Faults{Poison: []embedsim.PoisonRule{{Match: "bad", Kind: embedsim.PoisonInvalidInput}}}, embedder.ResilientConfig{})
	err := b.embed("bad")
	if se := statusErr(t, err); se.StatusCode != 400 {
		t.Errorf("status %d", se.StatusCode)
	}
	if n := b.sim.Counts().Requests; n != 1 {
		t.Errorf("%d attempts for a 400, want 1", n)
	}
}

func TestResilientOutageOpensBreaker(t *testing.T) {
	t.Parallel()
	b := setupResilient(t, embedsim.Faults{}, embedder.ResilientConfig{
		MaxRetries: -1, FailureThreshold: 3, BreakerDelay: time.Hour,
	})
	b.sim.SetOutage(time.Now().Add(-time.Second), time.Now().Add(time.Hour))
	for range 3 {
		if err := b.embed("x"); !classify.IsRetryable(err) {
			t.Fatalf("outage error not retryable: %v", err)
		}
	}
	if s := b.resilient.State(); s != embedder.BreakerOpen {
		t.Fatalf("State() = %v after 3 failures, want open", s)
	}
	err := b.embed("x")
	d := classify.Classify(err)
	if d.Disposition != classify.Retry || d.Class != classify.ClassCircuitOpen || d.RetryAfter <= 0 {
		t.Errorf("while open: %+v (%v), want retry circuit_open with a RetryAfter", d, err)
	}
	if n := b.sim.Counts().Requests; n != 3 {
		t.Errorf("server saw %d requests, want 3: an open breaker must not call out", n)
	}
	if got := b.Transitions(); !slices.Equal(got, []string{"closed->open"}) {
		t.Errorf("transitions %v", got)
	}
}

func TestResilientDataErrorsNeverOpenBreaker(t *testing.T) {
	t.Parallel()
	b := setupResilient(t, embedsim.Faults{
		MaxInputChars: 20,
		Poison: []embedsim.PoisonRule{
			{Match: "bad", Kind: embedsim.PoisonInvalidInput},
			{Match: "dim", Kind: embedsim.PoisonWrongDims},
			{Match: "nan", Kind: embedsim.PoisonNaN},
		},
	}, embedder.ResilientConfig{FailureThreshold: 2})
	for range 5 {
		for _, in := range []string{"bad", "dim", "nan", "far too long for this model", ""} {
			if err := b.embed(in); !classify.IsDataError(err) {
				t.Fatalf("%q: %v is not a data error", in, err)
			}
		}
	}
	if s := b.resilient.State(); s != embedder.BreakerClosed {
		t.Errorf("State() = %v after 25 data errors, want closed", s)
	}
	if got := b.Transitions(); len(got) != 0 {
		t.Errorf("transitions %v", got)
	}
}

func TestResilientCallerCancelDoesNotCount(t *testing.T) {
	t.Parallel()
	b := setupResilient(t, embedsim.Faults{RateHang: 1, HangFor: time.Hour}, embedder.ResilientConfig{FailureThreshold: 1})
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		// Cancel once the request is hanging in the server (or give up
		// waiting; the assertions below then fail on their own).
		deadline := time.Now().Add(5 * time.Second)
		for b.sim.Counts().Requests == 0 && time.Now().Before(deadline) {
			time.Sleep(2 * time.Millisecond)
		}
		cancel()
	}()
	_, err := b.resilient.Embed(ctx, []string{"x"})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if s := b.resilient.State(); s != embedder.BreakerClosed {
		t.Errorf("State() = %v after the caller canceled, want closed", s)
	}
}

func TestResilientTimeout(t *testing.T) {
	t.Parallel()
	b := setupResilient(t, embedsim.Faults{RateHang: 1, HangFor: time.Hour}, embedder.ResilientConfig{
		Timeout: 500 * time.Millisecond, MaxRetries: 1, RetryDelay: time.Millisecond, RetryMaxDelay: time.Millisecond,
	})
	err := b.embed("x")
	if d := classify.Classify(err); d.Disposition != classify.Retry || d.Class != classify.ClassTimeout {
		t.Errorf("classified %+v (%v), want retry timeout", d, err)
	}
	if n := b.sim.Counts().Requests; n != 2 {
		t.Errorf("%d attempts, want 2 (timeouts are retried)", n)
	}
}

func TestResilientWaitReady(t *testing.T) {
	t.Parallel()
	const delay = 300 * time.Millisecond
	b := setupResilient(t, embedsim.Faults{}, embedder.ResilientConfig{
		MaxRetries: -1, FailureThreshold: 2, BreakerDelay: delay,
	})
	if err := b.resilient.WaitReady(context.Background()); err != nil {
		t.Fatalf("WaitReady on a closed breaker: %v", err)
	}
	b.sim.SetOutage(time.Now().Add(-time.Second), time.Now().Add(time.Hour))
	_ = b.embed("x")
	_ = b.embed("x")
	opened := time.Now()
	if s := b.resilient.State(); s != embedder.BreakerOpen {
		t.Fatalf("State() = %v, want open", s)
	}

	// While open, WaitReady blocks: a short deadline runs out.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	err := b.resilient.WaitReady(ctx)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) && time.Since(opened) < delay {
		t.Fatalf("WaitReady while open = %v, want it to block until its deadline", err)
	}

	// While the outage lasts it keeps blocking past the delay: it probes
	// the half-open breaker itself, about once a delay, and each failed
	// probe opens it again.
	ctx, cancel = context.WithTimeout(context.Background(), 4*delay)
	err = b.resilient.WaitReady(ctx)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("WaitReady during the outage = %v, want it to block until its deadline", err)
	}
	if n := b.sim.SeenCount(embedder.ProbeInput); n < 2 || n > 5 {
		t.Errorf("%d probes in four breaker delays, want about one a delay", n)
	}
	if n := b.sim.SeenCount("x"); n != 2 {
		t.Errorf("the caller's input was sent %d times, want only its own 2", n)
	}

	// The outage is over: the next probe succeeds, closes the breaker,
	// and WaitReady returns.
	b.sim.SetOutage(time.Time{}, time.Time{})
	ctx, cancel = context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := b.resilient.WaitReady(ctx); err != nil {
		t.Fatalf("WaitReady: %v", err)
	}
	if s := b.resilient.State(); s != embedder.BreakerClosed {
		t.Errorf("State() = %v after WaitReady, want closed", s)
	}
	got := b.Transitions()
	if len(got) < 4 || got[0] != "closed->open" || got[1] != "open->half-open" || got[2] != "half-open->open" || got[len(got)-1] != "half-open->closed" {
		t.Errorf("transitions %v, want closed->open, then failed probes (open->half-open->open), then half-open->closed", got)
	}
}

func TestResilientOptionsValidate(t *testing.T) {
	t.Parallel()
	for _, o := range []embedder.ResilientConfig{
		{Timeout: -1},
		{RetryDelay: time.Second, RetryMaxDelay: time.Millisecond},
	} {
		if _, err := embedder.NewResilient(nil, o); err == nil {
			t.Errorf("NewResilient accepted %+v", o)
		}
	}
}
