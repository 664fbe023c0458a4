package classify

import (
	"math/rand/v2"
	"time"
)

// Defaults for a Backoff whose fields are zero.
const (
	// DefaultBackoffBase is the ceiling of the first delay.
	DefaultBackoffBase = time.Second
	// DefaultBackoffMax is the ceiling of every delay.
	DefaultBackoffMax = 5 * time.Minute
)

// DefaultBackoff is the backoff every stage uses unless configured otherwise:
// 1s doubling up to 5m, with full jitter. The zero Backoff behaves the same.
var DefaultBackoff = Backoff{Base: DefaultBackoffBase, Max: DefaultBackoffMax}

// Backoff computes capped exponential delays with full jitter: the delay
// before retry n is drawn uniformly from [0, min(Max, Base·2^(n-1))).
//
// Full jitter rather than a fixed schedule because failures arrive together:
// an outage fails thousands of chunks at once, and identical delays would
// bring them all back at once to knock the recovering service over again.
// The zero value is ready to use.
type Backoff struct {
	// Base is the ceiling of the first delay; each further attempt doubles
	// it. Defaults to DefaultBackoffBase (1s).
	Base time.Duration
	// Max is the ceiling of any delay. Defaults to DefaultBackoffMax (5m).
	Max time.Duration
	// Rand returns a number in [0, 1). Defaults to math/rand/v2's Float64;
	// tests inject a fixed function.
	Rand func() float64
}

// Delay returns the wait before retry number attempt, counting from 1; an
// attempt below 1 counts as 1. It never exceeds Max, however large attempt
// is.
func (b Backoff) Delay(attempt int) time.Duration {
	ceiling := b.ceiling(attempt)
	r := b.random()
	if !(r > 0) { // also catches NaN from a broken Rand
		return 0
	}
	f := r * float64(ceiling)
	// Also guards the conversion: float64(ceiling) may round up past
	// math.MaxInt64 when Max is huge.
	if f >= float64(ceiling) {
		return ceiling
	}
	return time.Duration(f)
}

// DelayAtLeast returns the longer of Delay(attempt) and floor. Pass a
// Decision's RetryAfter as floor to honour Retry-After: the server's wish is
// a minimum, and jitter on top still spreads the crowd.
func (b Backoff) DelayAtLeast(attempt int, floor time.Duration) time.Duration {
	return max(b.Delay(attempt), floor)
}

// ceiling returns min(Max, Base·2^(attempt-1)) without overflowing.
func (b Backoff) ceiling(attempt int) time.Duration {
	base, limit := b.Base, b.Max
	if base <= 0 {
		base = DefaultBackoffBase
	}
	if limit <= 0 {
		limit = DefaultBackoffMax
	}
	if base >= limit {
		return limit
	}
	// Comparing with limit>>n rather than computing base<<n keeps the
	// doubling from overflowing; a shift of 64 or more yields 0, so huge
	// attempts land on limit.
	n := uint(max(attempt, 1) - 1)
	if base > limit>>n {
		return limit
	}
	return base << n
}

func (b Backoff) random() float64 {
	if b.Rand == nil {
		return rand.Float64()
	}
	return b.Rand()
}
