package embedder

import (
	"context"
	"sync"
	"time"

	"github.com/sluicehq/sluice/internal/wait"
)

// Budget paces embedding requests to a provider's allowance: at most
// RequestsPerMinute requests and TokensPerMinute input tokens a minute,
// spread evenly. The request rate is adaptive (AIMD): each 429 halves it,
// at most once per second so that one burst of refusals counts once, and
// each success adds back a hundredth of the allowance, so a storm of 429s
// settles near the rate the provider really accepts. A zero allowance is
// unlimited. Safe for concurrent use.
type Budget struct {
	mu       sync.Mutex
	now      func() time.Time
	requests aimd
	tokens   float64 // per second; 0 unlimited
	nextReq  time.Time
	nextTok  time.Time
}

// NewBudget returns a budget for the given allowances; now defaults to
// time.Now.
func NewBudget(requestsPerMinute, tokensPerMinute int, now func() time.Time) *Budget {
	if now == nil {
		now = time.Now
	}
	ceiling := float64(requestsPerMinute) / 60
	return &Budget{now: now, requests: aimd{ceiling: ceiling, rate: ceiling}, tokens: float64(tokensPerMinute) / 60}
}

// Reserve books one request of tokens input tokens and returns how long
// the caller must wait before sending it.
func (b *Budget) Reserve(tokens int) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.now()
	wait := time.Duration(0)
	if b.requests.rate > 0 {
		wait = max(wait, book(&b.nextReq, now, 1/b.requests.rate))
	}
	if b.tokens > 0 {
		wait = max(wait, book(&b.nextTok, now, float64(tokens)/b.tokens))
	}
	return wait
}

// Wait reserves a request and waits for its turn, or returns ctx's error.
func (b *Budget) Wait(ctx context.Context, tokens int) error {
	if !wait.Sleep(ctx, b.Reserve(tokens), nil) {
		return ctx.Err()
	}
	return nil
}

// Throttled records a 429 from the provider.
func (b *Budget) Throttled() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.requests.decrease(b.now())
}

// Succeeded records a request the provider accepted.
func (b *Budget) Succeeded() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.requests.increase()
}

// Rate returns the current request allowance, per minute; 0 is
// unlimited.
func (b *Budget) Rate() float64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.requests.rate * 60
}

// book reserves cost seconds of a resource whose next free instant is
// *next, and returns how long from now the reservation starts.
func book(next *time.Time, now time.Time, cost float64) time.Duration {
	start := *next
	if start.Before(now) {
		start = now
	}
	*next = start.Add(time.Duration(cost * float64(time.Second)))
	return start.Sub(now)
}

// aimd is an additive-increase, multiplicative-decrease rate in
// requests per second, between a floor and its ceiling. The zero ceiling
// disables it.
type aimd struct {
	ceiling, rate float64
	lastDecrease  time.Time
}

// aimdFloor is the lowest share of the ceiling a storm can push the rate
// to: the provider is throttling, not gone.
const aimdFloor = 1.0 / 64

// decrease halves the rate, once per second at most.
func (a *aimd) decrease(now time.Time) {
	if a.ceiling <= 0 || now.Sub(a.lastDecrease) < time.Second {
		return
	}
	a.lastDecrease = now
	a.rate = max(a.ceiling*aimdFloor, a.rate/2)
}

// increase adds a hundredth of the ceiling back.
func (a *aimd) increase() {
	if a.ceiling <= 0 {
		return
	}
	a.rate = min(a.ceiling, a.rate+a.ceiling/100)
}
