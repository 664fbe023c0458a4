package embedsim

import (
	"fmt"
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// Quota is an organisation's allowance, shared by every client of the
// server, as a provider enforces it: at most RequestsPerMinute requests
// and TokensPerMinute input tokens a minute. Each allowance is a bucket
// that holds a minute's worth and refills continuously, so a client may
// burst up to the limit and then go at the limit's pace. A request the
// buckets cannot pay for is answered 429 with Retry-After and costs
// nothing. Zero is unlimited.
type Quota struct {
	// RequestsPerMinute is the request allowance. Defaults to 0:
	// unlimited.
	RequestsPerMinute int `json:"requests_per_minute"`
	// TokensPerMinute is the input-token allowance, counted with the
	// model's tokenizer. Defaults to 0: unlimited.
	TokensPerMinute int `json:"tokens_per_minute"`
}

// Validate reports a negative allowance.
func (q Quota) Validate() error {
	if q.RequestsPerMinute < 0 || q.TokensPerMinute < 0 {
		return fmt.Errorf("quota %d requests and %d tokens a minute: use 0 (unlimited) or more", q.RequestsPerMinute, q.TokensPerMinute)
	}
	return nil
}

// quota holds the two buckets of a Quota.
type quota struct {
	mu               sync.Mutex
	requests, tokens bucket
}

func newQuota(q Quota, now time.Time) *quota {
	return &quota{requests: newBucket(q.RequestsPerMinute, now), tokens: newBucket(q.TokensPerMinute, now)}
}

// limited reports whether any allowance is set.
func (q *quota) limited() bool { return q.requests.limit > 0 || q.tokens.limit > 0 }

// take pays for one request of n tokens if both buckets can, and returns
// the headers that describe the buckets after it, and when refused how
// long until they could pay.
func (q *quota) take(n int, now time.Time) (h rateHeaders, wait time.Duration) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.requests.refill(now)
	q.tokens.refill(now)
	wait = max(q.requests.until(1), q.tokens.until(float64(n)))
	if wait == 0 {
		q.requests.spend(1)
		q.tokens.spend(float64(n))
	}
	return rateHeaders{requests: q.requests.state(), tokens: q.tokens.state()}, wait
}

// peek returns the headers that describe the buckets now, paying
// nothing: for an answer the quota did not decide.
func (q *quota) peek(now time.Time) rateHeaders {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.requests.refill(now)
	q.tokens.refill(now)
	return rateHeaders{requests: q.requests.state(), tokens: q.tokens.state()}
}

// quotaError is the provider's 429 for a request the quota refused.
func quotaError(model string, h rateHeaders, tokens int, wait time.Duration) apiError {
	what, limit, used, requested := "requests per min (RPM)", h.requests.limit, h.requests.limit-h.requests.remaining, 1
	if h.requests.limit == 0 || h.requests.remaining >= 1 {
		what, limit, used, requested = "tokens per min (TPM)", h.tokens.limit, h.tokens.limit-h.tokens.remaining, tokens
	}
	return apiError{
		Message: fmt.Sprintf("Rate limit reached for %s in organization org-embed-sim on %s: Limit %d, Used %d, Requested %d. Please try again in %s.",
			model, what, limit, used, requested, resetText(wait)),
		Type: typeRateLimit, Code: "rate_limit_exceeded", status: http.StatusTooManyRequests, fault: "quota",
	}
}

// bucket is one allowance: level units, refilled at limit a minute up
// to limit. A zero limit is unlimited.
type bucket struct {
	limit int
	level float64
	at    time.Time
}

func newBucket(limit int, now time.Time) bucket {
	return bucket{limit: limit, level: float64(limit), at: now}
}

func (b *bucket) perSecond() float64 { return float64(b.limit) / 60 }

func (b *bucket) refill(now time.Time) {
	if b.limit == 0 || !now.After(b.at) {
		return
	}
	b.level = min(float64(b.limit), b.level+now.Sub(b.at).Seconds()*b.perSecond())
	b.at = now
}

// until is how long until the bucket holds n. A request larger than the
// whole bucket waits for a full one and is then refused again: the
// provider refuses such a request whatever the wait.
func (b *bucket) until(n float64) time.Duration {
	if b.limit == 0 || b.level >= n {
		return 0
	}
	need := min(n, float64(b.limit)) - b.level
	return time.Duration(math.Ceil(need / b.perSecond() * float64(time.Second)))
}

func (b *bucket) spend(n float64) {
	if b.limit > 0 {
		b.level -= n
	}
}

// state is what the headers say of the bucket: its limit, what remains,
// and how long until it is full again.
func (b *bucket) state() bucketState {
	if b.limit == 0 {
		return bucketState{}
	}
	s := bucketState{limit: b.limit, remaining: int(math.Max(0, math.Floor(b.level)))}
	if b.level < float64(b.limit) {
		s.reset = time.Duration(math.Ceil((float64(b.limit) - b.level) / b.perSecond() * float64(time.Second)))
	}
	return s
}

type bucketState struct {
	limit, remaining int
	reset            time.Duration
}

// rateHeaders are the x-ratelimit-* headers of one answer.
type rateHeaders struct {
	requests, tokens bucketState
}

// set writes the headers of the allowances that are limited, in the
// provider's format: reset as a Go duration rounded to the millisecond,
// such as "1s", "6m0s" or "20ms".
func (r rateHeaders) set(h http.Header) {
	for _, b := range []struct {
		name  string
		state bucketState
	}{{"requests", r.requests}, {"tokens", r.tokens}} {
		if b.state.limit == 0 {
			continue
		}
		h.Set("X-Ratelimit-Limit-"+b.name, strconv.Itoa(b.state.limit))
		h.Set("X-Ratelimit-Remaining-"+b.name, strconv.Itoa(b.state.remaining))
		h.Set("X-Ratelimit-Reset-"+b.name, resetText(b.state.reset))
	}
}

// resetText formats a reset as the provider does, never rounding a wait
// down to nothing.
func resetText(d time.Duration) string {
	if d > 0 && d < time.Millisecond {
		d = time.Millisecond
	}
	return d.Round(time.Millisecond).String()
}
