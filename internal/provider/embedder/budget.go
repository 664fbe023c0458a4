package embedder

import (
	"context"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/sluicehq/sluice/internal/platform/wait"
)

// Budget paces embedding requests to a provider's allowance: at most
// RequestsPerMinute requests and TokensPerMinute input tokens a minute,
// spread evenly. The request rate is adaptive (AIMD): each 429 halves it,
// at most once per second so that one burst of refusals counts once, and
// each success adds back a hundredth of the allowance, so a storm of 429s
// settles near the rate the provider really accepts. A zero allowance is
// unlimited.
//
// The provider's own word counts too (Observe): an allowance it reports
// lower than the configured one is adopted, and what it reports remaining
// is spent ahead of the provider's refusals — a request that would take
// more than remains waits until the provider's allowance has refilled
// enough, at its limit a minute, as OpenAI's buckets do. Once the
// provider reports its allowances, a 429's Retry-After holds every
// request, not only the refused one. 429s stay the last resort.
//
// A budget shared by a fleet (package fleetbudget) paces this process to
// its share of the allowances (SetShare), and reports what it spent
// (Stats). Safe for concurrent use.
type Budget struct {
	mu        sync.Mutex
	now       func() time.Time
	log       zerolog.Logger
	requests  aimd
	tokens    float64 // per second; 0 unlimited
	nextReq   time.Time
	nextTok   time.Time
	holdUntil time.Time
	// configured are the allowances a minute the budget was built with;
	// provider are the provider's buckets as last reported, spent since
	// by this budget's reservations.
	configured [2]int
	provider   [2]bucket
	adopted    [2]bool
	// allowance is the whole allowance per second, configured or the
	// provider's lower one; share the fraction of it this process may
	// spend.
	allowance [2]float64
	share     float64
	stats     Stats
	// lanes cap sources at a fraction of the share (CapSources).
	lanes map[string]*lane
	// reshared is closed, and replaced, when the share changes: waiters
	// then move their turn as the budget moved its bookings.
	reshared chan struct{}
}

// lane is one capped source's own pacing, at its fraction of the
// budget's.
type lane struct {
	fraction         float64
	nextReq, nextTok time.Time
}

// Stats are what a budget booked since it was built.
type Stats struct {
	// Requests and Tokens are the requests and input tokens reserved.
	Requests, Tokens int64
	// Waited is the time reservations were told to wait for their turn.
	Waited time.Duration
	// Queued is how far ahead of now the budget's turns are booked: the
	// wait of the requests still waiting for theirs.
	Queued time.Duration
}

// Indexes of Budget.configured, provider and adopted.
const (
	kindRequests = iota
	kindTokens
)

var kindNames = [2]string{"requests", "tokens"}

// NewBudget returns a budget for the given allowances; now defaults to
// time.Now. log hears, once per allowance, that the provider's lower
// limit was adopted.
func NewBudget(requestsPerMinute, tokensPerMinute int, now func() time.Time, log zerolog.Logger) *Budget {
	if now == nil {
		now = time.Now
	}
	ceiling := float64(requestsPerMinute) / 60
	return &Budget{now: now, log: log, requests: aimd{ceiling: ceiling, rate: ceiling}, tokens: float64(tokensPerMinute) / 60,
		configured: [2]int{requestsPerMinute, tokensPerMinute}, share: 1, reshared: make(chan struct{}),
		allowance: [2]float64{ceiling, float64(tokensPerMinute) / 60}}
}

// Reserve books one request of tokens input tokens and returns how long
// the caller must wait before sending it.
func (b *Budget) Reserve(tokens int) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.reserve(b.now(), tokens)
}

// reserve is Reserve at now; b.mu must be held.
func (b *Budget) reserve(now time.Time, tokens int) time.Duration {
	wait := max(0, b.holdUntil.Sub(now))
	if b.requests.rate > 0 {
		wait = max(wait, book(&b.nextReq, now, 1/b.requests.rate))
	}
	if b.tokens > 0 {
		wait = max(wait, book(&b.nextTok, now, float64(tokens)/b.tokens))
	}
	wait = max(wait, b.provider[kindRequests].take(now, 1), b.provider[kindTokens].take(now, float64(tokens)))
	b.stats.Requests++
	b.stats.Tokens += int64(tokens)
	b.stats.Waited += wait
	return wait
}

// ReserveLane books one request of source's chunks in source's lane,
// when CapSources capped it, and returns how long until the lane lets it
// go: only then does the request Reserve its turn in the budget, so
// that a lane's wait holds none of the budget's turns. The lane's wait
// is the source's cap, not a want of budget: Stats.Waited leaves it out.
func (b *Budget) ReserveLane(source string, tokens int) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	l := b.lanes[source]
	if l == nil {
		return 0
	}
	now, wait := b.now(), time.Duration(0)
	if b.requests.rate > 0 {
		wait = book(&l.nextReq, now, 1/(b.requests.rate*l.fraction))
	}
	if b.tokens > 0 {
		wait = max(wait, book(&l.nextTok, now, float64(tokens)/(b.tokens*l.fraction)))
	}
	return wait
}

// CapSources caps each named source's requests at its fraction (0, 1)
// of the budget, in requests and tokens: the policy file's budget_share.
// A source not named, or at 1, is not capped.
func (b *Budget) CapSources(fractions map[string]float64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.lanes = map[string]*lane{}
	for source, f := range fractions {
		if f > 0 && f < 1 {
			b.lanes[source] = &lane{fraction: f}
		}
	}
}

// SetShare makes share (0 < share ≤ 1) of the allowances this process's
// pace: the adaptive request rate keeps its place between floor and
// ceiling, so a member that was backing off from 429s keeps backing off
// within its new share. A share outside (0, 1] is clamped to it.
func (b *Budget) SetShare(share float64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	share = min(1, max(share, minShare))
	if share == b.share {
		return
	}
	ratio := share / b.share
	b.share = share
	b.requests.ceiling = b.allowance[kindRequests] * share
	b.requests.rate = min(b.requests.ceiling, b.requests.rate*ratio)
	b.tokens = b.allowance[kindTokens] * share
	// Turns booked at the old pace move to the new one: a member that
	// booked at an idle member's floor must not keep waiting at it once
	// its share grows, nor one that shrank go at its old pace.
	now := b.now()
	b.nextReq, b.nextTok = rescale(b.nextReq, now, ratio), rescale(b.nextTok, now, ratio)
	close(b.reshared)
	b.reshared = make(chan struct{})
}

// rescale moves a turn booked at a pace to the pace ratio times it.
func rescale(at, now time.Time, ratio float64) time.Time {
	if !at.After(now) {
		return at
	}
	return now.Add(time.Duration(float64(at.Sub(now)) / ratio))
}

// reserveWatch is Reserve, with the share the turn was booked at and
// the channel closed when that share changes. All three are read under
// one lock: a share set in between would leave the turn booked at one
// share, watched as if at another, and never rebooked.
func (b *Budget) reserveWatch(tokens int) (turn time.Time, share float64, reshared <-chan struct{}) {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.now()
	return now.Add(b.reserve(now, tokens)), b.share, b.reshared
}

// rebook moves a turn booked at share to the share now, and returns it
// with the share and the channel to watch next.
func (b *Budget) rebook(turn time.Time, share float64) (time.Time, float64, <-chan struct{}) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return rescale(turn, b.now(), b.share/share), b.share, b.reshared
}

// minShare keeps a share positive: a zero allowance is unlimited.
const minShare = 1e-6

// Share returns the fraction of the allowances this process paces to.
func (b *Budget) Share() float64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.share
}

// Allowances returns the whole allowances a minute, requests and tokens,
// before any share: configured, or the provider's when lower. 0 is
// unlimited.
func (b *Budget) Allowances() (requests, tokens float64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.allowance[kindRequests] * 60, b.allowance[kindTokens] * 60
}

// Configured returns the allowances a minute the budget was built with,
// requests and tokens, whatever the provider reports. 0 is unlimited.
func (b *Budget) Configured() (requests, tokens float64) {
	return float64(b.configured[kindRequests]), float64(b.configured[kindTokens])
}

// Stats returns what the budget booked so far.
func (b *Budget) Stats() Stats {
	b.mu.Lock()
	defer b.mu.Unlock()
	s, now := b.stats, b.now()
	s.Queued = max(0, b.nextReq.Sub(now), b.nextTok.Sub(now))
	return s
}

// CountsTokens reports whether the budget paces tokens, by its own
// allowance or the provider's: only then need callers count them.
func (b *Budget) CountsTokens() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.tokens > 0 || b.provider[kindTokens].limit > 0
}

// Wait waits for the lane of the source ctx carries (WithSource), then
// reserves a request and waits for its turn, or returns ctx's error.
func (b *Budget) Wait(ctx context.Context, tokens int) error {
	if !wait.Sleep(ctx, b.ReserveLane(sourceOf(ctx), tokens), nil) {
		return ctx.Err()
	}
	turn, share, reshared := b.reserveWatch(tokens)
	for {
		d := turn.Sub(b.now())
		if d <= 0 {
			return ctx.Err()
		}
		if !wait.Sleep(ctx, d, reshared) {
			return ctx.Err()
		}
		select {
		case <-reshared:
			turn, share, reshared = b.rebook(turn, share)
		default:
			return nil
		}
	}
}

// Observe takes in the provider's rate-limit headers of one answer.
func (b *Budget) Observe(rl RateLimits) {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.now()
	for kind, l := range [2]RateLimit{rl.Requests, rl.Tokens} {
		if l.Limit <= 0 {
			continue
		}
		b.provider[kind].observe(now, l)
		if c := b.configured[kind]; c == 0 || l.Limit < c {
			b.adopt(kind, l.Limit)
		}
	}
}

// adopt makes the provider's limit a minute the budget's allowance, of
// which this process paces to its share.
func (b *Budget) adopt(kind, limit int) {
	whole := float64(limit) / 60
	if b.allowance[kind] == whole {
		return
	}
	b.allowance[kind] = whole
	perSecond := whole * b.share
	switch kind {
	case kindRequests:
		b.requests.ceiling = perSecond
		b.requests.rate = min(perSecond, b.requests.rate)
		if b.requests.rate == 0 {
			b.requests.rate = perSecond
		}
	case kindTokens:
		b.tokens = perSecond
	}
	if !b.adopted[kind] {
		b.adopted[kind] = true
		b.log.Info().Str("allowance", kindNames[kind]).Int("configured_per_minute", b.configured[kind]).Int("provider_per_minute", limit).
			Msg("the provider's rate limit is lower than configured (0 is unlimited): pacing to the provider's")
	}
}

// Throttled records a 429 from the provider. When the provider reports
// its allowances, the 429 says the organisation's are spent: every
// request is held for its Retry-After (zero when it gave none). A 429
// from a provider that reports none may concern that request alone, and
// holds only it (Resilient waits it out).
func (b *Budget) Throttled(retryAfter time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.now()
	b.requests.decrease(now)
	if b.provider[kindRequests].limit == 0 && b.provider[kindTokens].limit == 0 {
		return
	}
	if until := now.Add(retryAfter); until.After(b.holdUntil) {
		b.holdUntil = until
	}
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

// TokenRate returns the current token allowance, per minute; 0 is
// unlimited.
func (b *Budget) TokenRate() float64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.tokens * 60
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

// bucket is the budget's picture of one of the provider's allowances: a
// bucket of limit a minute that refills continuously, holding level at
// instant at. Reservations spend it, possibly below zero: a reservation
// that finds it short waits for the refill. The zero bucket is unknown,
// and never makes anyone wait.
type bucket struct {
	limit int
	level float64
	at    time.Time
}

func (k *bucket) perSecond() float64 { return float64(k.limit) / 60 }

// levelAt is the bucket's level at now, refilled since the last report.
func (k *bucket) levelAt(now time.Time) float64 {
	return min(float64(k.limit), k.level+max(0, now.Sub(k.at).Seconds())*k.perSecond())
}

// observe takes a report: the provider's remaining, unless the budget's
// own count, which includes requests still on their way, is lower.
func (k *bucket) observe(now time.Time, l RateLimit) {
	level := float64(l.Remaining)
	if k.limit == l.Limit {
		level = min(level, k.levelAt(now))
	}
	k.limit, k.level, k.at = l.Limit, level, now
}

// take spends n and returns how long until the bucket held n before
// this reservation: zero while the provider has room.
func (k *bucket) take(now time.Time, n float64) time.Duration {
	if k.limit == 0 {
		return 0
	}
	level := k.levelAt(now)
	k.level, k.at = level-n, now
	short := min(n, float64(k.limit)) - level
	if short <= 0 {
		return 0
	}
	return time.Duration(short / k.perSecond() * float64(time.Second))
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
