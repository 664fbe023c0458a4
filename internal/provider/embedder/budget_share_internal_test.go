package embedder

import (
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// A share paces the process to its fraction of the allowances, the
// provider's adopted ones included, and keeps the adaptive rate's place.
func TestBudgetPacesToItsShare(t *testing.T) {
	t.Parallel()
	now := time.Unix(1000, 0)
	clock := func() time.Time { return now }
	tests := []struct {
		name      string
		rpm, tpm  int
		steps     func(b *Budget)
		wantRate  float64 // requests a minute
		wantToken float64 // tokens a minute
	}{
		{"a fifth of the allowances", 600, 1_000_000, func(b *Budget) { b.SetShare(0.2) }, 120, 200_000},
		{"a share grows back", 600, 0, func(b *Budget) { b.SetShare(0.2); b.SetShare(0.25) }, 150, 0},
		{"the provider's lower limit is shared too", 600, 0, func(b *Budget) {
			b.SetShare(0.5)
			b.Observe(RateLimits{Requests: RateLimit{Limit: 300, Remaining: 300, Reset: time.Second}})
		}, 150, 0},
		{"backing off keeps its place in a new share", 600, 0, func(b *Budget) {
			b.Throttled(0)
			b.SetShare(0.5)
		}, 150, 0},
		{"a share is never zero: that would be unlimited", 600, 0, func(b *Budget) { b.SetShare(0) }, 600 * minShare, 0},
		{"an unlimited budget stays unlimited", 0, 0, func(b *Budget) { b.SetShare(0.2) }, 0, 0},
	}
	for _, tt := range tests {
		b := NewBudget(tt.rpm, tt.tpm, clock, zerolog.Nop())
		tt.steps(b)
		if r, tr := b.Rate(), b.TokenRate(); !near(r, tt.wantRate) || !near(tr, tt.wantToken) {
			t.Errorf("%s: %g requests and %g tokens a minute, want %g and %g", tt.name, r, tr, tt.wantRate, tt.wantToken)
		}
	}

	b := NewBudget(600, 0, clock, zerolog.Nop())
	b.SetShare(0.25)
	b.Reserve(10)
	if w := b.Reserve(10); w != 400*time.Millisecond {
		t.Errorf("at a quarter of 10 requests a second, the second request waits %v, want 400ms", w)
	}
	if s := b.Stats(); s.Requests != 2 || s.Tokens != 20 || s.Waited != 400*time.Millisecond {
		t.Errorf("stats %+v, want 2 requests, 20 tokens, 400ms waited", s)
	}
}

func near(a, b float64) bool { return a-b < 1e-6 && b-a < 1e-6 }

// A capped source goes at its fraction of the budget and leaves the rest
// to the others; its own cap is not a wait for the shared budget.
func TestBudgetCapsASource(t *testing.T) {
	t.Parallel()
	now := time.Unix(1000, 0)
	b := NewBudget(600, 0, func() time.Time { return now }, zerolog.Nop())
	b.CapSources(map[string]float64{"backfill": 0.2, "live": 1})
	var lane []time.Duration
	for range 3 {
		lane = append(lane, b.ReserveLane("backfill", 1))
	}
	// 10 requests a second, the backfill at 2: one every 500ms.
	if lane[0] != 0 || lane[1] != 500*time.Millisecond || lane[2] != time.Second {
		t.Errorf("backfill's lane waits %v, want 0s 500ms 1s", lane)
	}
	if w := b.ReserveLane("live", 1); w != 0 {
		t.Errorf("an uncapped source waits %v in a lane, want none", w)
	}
	// The backfill's first request and three live ones take the budget's
	// next turns; the backfill's later ones hold none of them meanwhile.
	var turns []time.Duration
	for range 4 {
		turns = append(turns, b.Reserve(1))
	}
	if turns[3] != 300*time.Millisecond {
		t.Errorf("the budget's turns %v, want one every 100ms", turns)
	}
	if got := b.Stats().Waited; got != 600*time.Millisecond {
		t.Errorf("waited for the budget %v, want the turns' 600ms alone: the backfill's cap is no want of budget", got)
	}
	ctx := WithSource(t.Context(), "backfill")
	if sourceOf(ctx) != "backfill" {
		t.Errorf("the context carries source %q", sourceOf(ctx))
	}
}

// A request that booked its turn at a small share goes at the new pace
// once the share grows, not at the old one.
func TestBudgetWaitFollowsANewShare(t *testing.T) {
	t.Parallel()
	b := NewBudget(600, 0, nil, zerolog.Nop())
	b.SetShare(0.01) // one request every 10 s
	b.Reserve(1)
	done := make(chan error, 1)
	go func() { done <- b.Wait(t.Context(), 1) }()
	// The waiter's turn is 10 s away until the share grows a hundredfold.
	select {
	case err := <-done:
		t.Fatalf("the request went before the share grew: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	b.SetShare(1)
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("the request still waits at the old share's pace")
	}
}

// A turn is booked, and its share and the channel that says the share
// changed are read, at one instant: nothing (a new share, the clock)
// moves between them.
func TestBudgetBooksATurnAndItsShareAtOneInstant(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	now := time.Unix(1000, 0)
	clock := func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		now = now.Add(100 * time.Millisecond) // every reading is a new instant
		return now
	}
	b := NewBudget(600, 0, clock, zerolog.Nop())
	b.SetShare(0.5)
	booked := clock().Add(100 * time.Millisecond)
	turn, share, reshared := b.reserveWatch(10)
	if !turn.Equal(booked) {
		t.Errorf("the first turn is %v after the instant it was booked, want none", turn.Sub(booked))
	}
	if share != 0.5 {
		t.Errorf("the turn was booked at share %g, want 0.5", share)
	}
	b.SetShare(0.25)
	select {
	case <-reshared:
	default:
		t.Error("a new share left the turn's channel open: the turn would never be rebooked")
	}
}
