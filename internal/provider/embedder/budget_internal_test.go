package embedder

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

func TestAIMD(t *testing.T) {
	t.Parallel()
	t0 := time.Unix(1000, 0)
	tests := []struct {
		name  string
		start aimd
		steps func(a *aimd)
		want  float64
	}{
		{"a 429 halves the rate", aimd{ceiling: 10, rate: 10}, func(a *aimd) { a.decrease(t0) }, 5},
		{"a burst of 429s within a second counts once", aimd{ceiling: 10, rate: 10},
			func(a *aimd) {
				a.decrease(t0)
				a.decrease(t0.Add(300 * time.Millisecond))
				a.decrease(t0.Add(999 * time.Millisecond))
			}, 5},
		{"429s a second apart each halve", aimd{ceiling: 10, rate: 10}, func(a *aimd) { a.decrease(t0); a.decrease(t0.Add(time.Second)) }, 2.5},
		{"never below the floor", aimd{ceiling: 64, rate: 1.5}, func(a *aimd) { a.decrease(t0) }, 1},
		{"a success adds a hundredth of the ceiling", aimd{ceiling: 100, rate: 50}, func(a *aimd) { a.increase() }, 51},
		{"never above the ceiling", aimd{ceiling: 100, rate: 99.5}, func(a *aimd) { a.increase(); a.increase() }, 100},
		{"a zero ceiling is inert", aimd{}, func(a *aimd) { a.decrease(t0); a.increase() }, 0},
	}
	for _, tt := range tests {
		a := tt.start
		tt.steps(&a)
		if a.rate != tt.want {
			t.Errorf("%s: rate %g, want %g", tt.name, a.rate, tt.want)
		}
	}
}

// Requests and tokens are spread evenly over the minute; the scarcer
// allowance sets the pace.
func TestBudgetPacesRequestsAndTokens(t *testing.T) {
	t.Parallel()
	now := time.Unix(1000, 0)
	b := NewBudget(60, 600, func() time.Time { return now }, zerolog.Nop())
	var waits []time.Duration
	for range 3 {
		waits = append(waits, b.Reserve(5))
	}
	// 1 request/s, 10 tokens/s: 5 tokens cost 0.5 s, so requests set the pace.
	if waits[0] != 0 || waits[1] != time.Second || waits[2] != 2*time.Second {
		t.Errorf("waits %v, want 0s 1s 2s", waits)
	}
	now = now.Add(10 * time.Second)
	if w := b.Reserve(50); w != 0 {
		t.Errorf("after a pause: wait %v, want none", w)
	}
	if w := b.Reserve(1); w != 5*time.Second {
		t.Errorf("after 50 tokens at 10/s: wait %v, want 5s", w)
	}
	b.Throttled(0)
	if r := b.Rate(); r != 30 {
		t.Errorf("rate after a 429 = %g/min, want 30", r)
	}
	if w := NewBudget(0, 0, nil, zerolog.Nop()).Reserve(1_000_000); w != 0 {
		t.Errorf("unlimited budget made a caller wait %v", w)
	}
}

// The provider's headers: a limit lower than the configured one (or any,
// when none is configured) is adopted and logged once; what remains is
// spent before the provider refuses, a request that would take more
// waiting for the refill; a 429's Retry-After holds every request.
func TestBudgetPacesFromTheProvider(t *testing.T) {
	t.Parallel()
	now := time.Unix(1000, 0)
	clock := func() time.Time { return now }
	var log strings.Builder
	b := NewBudget(120, 0, clock, zerolog.New(&log))
	b.Observe(RateLimits{Requests: RateLimit{Limit: 600, Remaining: 600}, Tokens: RateLimit{Limit: 6000, Remaining: 25, Reset: 59750 * time.Millisecond}})
	b.Observe(RateLimits{Requests: RateLimit{Limit: 600, Remaining: 599}, Tokens: RateLimit{Limit: 6000, Remaining: 25, Reset: 59750 * time.Millisecond}})
	if r, tr := b.Rate(), b.TokenRate(); r != 120 || tr != 6000 {
		t.Errorf("rates %g requests and %g tokens a minute, want the configured 120 and the provider's 6000", r, tr)
	}
	if n := strings.Count(log.String(), "lower than configured"); n != 1 || !strings.Contains(log.String(), `"allowance":"tokens"`) {
		t.Errorf("logged %q, want the tokens' adoption once", log.String())
	}
	// The configured 120 requests a minute, the scarcer allowance here,
	// space requests half a second apart.
	waits := []time.Duration{b.Reserve(20), b.Reserve(20), b.Reserve(20)}
	if waits[0] != 0 || waits[1] != 500*time.Millisecond || waits[2] != time.Second {
		t.Errorf("waits %v, want 0s 500ms 1s", waits)
	}
	// After a pause the budget's own allowances would let a burst go at
	// once, but the provider says nothing remains: the request waits for
	// its 50 tokens to refill.
	now = now.Add(10 * time.Second)
	b.Observe(RateLimits{Tokens: RateLimit{Limit: 6000, Remaining: 0, Reset: time.Minute}})
	if w := b.Reserve(50); w != 500*time.Millisecond {
		t.Errorf("with nothing remaining: wait %v for 50 tokens at 100 a second, want 500ms", w)
	}
	b.Throttled(3 * time.Second)
	if w := b.Reserve(0); w != 3*time.Second {
		t.Errorf("after a 429 with Retry-After 3s: wait %v", w)
	}
	if b.Rate() != 60 {
		t.Errorf("rate after a 429 = %g a minute, want 60", b.Rate())
	}
	silent := NewBudget(0, 0, clock, zerolog.Nop())
	silent.Throttled(3 * time.Second)
	if w := silent.Reserve(1); w != 0 {
		t.Errorf("a 429 from a provider that reports no allowances held the next request %v", w)
	}
	higher := NewBudget(60, 0, clock, zerolog.Nop())
	higher.Observe(RateLimits{Requests: RateLimit{Limit: 600, Remaining: 600}})
	if r := higher.Rate(); r != 60 {
		t.Errorf("a provider limit above the configured one changed the rate to %g a minute", r)
	}
}

func TestParseRateLimits(t *testing.T) {
	t.Parallel()
	h := http.Header{}
	h.Set("x-ratelimit-limit-requests", "5000")
	h.Set("x-ratelimit-remaining-requests", "4999")
	h.Set("x-ratelimit-reset-requests", "12ms")
	h.Set("x-ratelimit-limit-tokens", "5000000")
	h.Set("x-ratelimit-remaining-tokens", "4000000")
	h.Set("x-ratelimit-reset-tokens", "6m0s")
	rl, ok := parseRateLimits(h)
	want := RateLimits{Requests: RateLimit{5000, 4999, 12 * time.Millisecond}, Tokens: RateLimit{5000000, 4000000, 6 * time.Minute}}
	if !ok || rl != want {
		t.Errorf("parsed %+v, %v; want %+v", rl, ok, want)
	}
	h.Set("x-ratelimit-reset-tokens", "soon")
	if rl, ok := parseRateLimits(h); !ok || rl.Tokens != (RateLimit{}) || rl.Requests != want.Requests {
		t.Errorf("a malformed reset: parsed %+v, %v; want the tokens left out", rl, ok)
	}
	if _, ok := parseRateLimits(http.Header{}); ok {
		t.Error("no headers parsed as rate limits")
	}
}
