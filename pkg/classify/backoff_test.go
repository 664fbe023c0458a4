package classify_test

import (
	"math"
	"testing"
	"time"

	"github.com/sluicehq/sluice/pkg/classify"
)

func fixed(r float64) func() float64 { return func() float64 { return r } }

// near reports whether got is within a millionth below want, which is what a
// Rand just under 1 yields.
func near(got, want time.Duration) bool {
	return got <= want && float64(got) >= float64(want)*(1-1e-6)-1
}

func TestBackoffGrowsToMax(t *testing.T) {
	t.Parallel()
	b := classify.Backoff{Base: time.Second, Max: 30 * time.Second, Rand: fixed(0.999999)}
	want := []time.Duration{
		time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second,
		16 * time.Second, 30 * time.Second, 30 * time.Second,
	}
	for i, w := range want {
		attempt := i + 1
		if got := b.Delay(attempt); !near(got, w) {
			t.Errorf("Delay(%d) = %v, want just under %v", attempt, got, w)
		}
	}
}

func TestBackoffJitterBounds(t *testing.T) {
	t.Parallel()
	b := classify.Backoff{Base: time.Second, Max: time.Minute}
	tests := []struct {
		name string
		rand float64
		want time.Duration
	}{
		{"zero", 0, 0},
		{"half", 0.5, 2 * time.Second},
		{"negative clamps to zero", -1, 0},
		{"one or more clamps to the ceiling", 1.5, 4 * time.Second},
		{"NaN clamps to zero", math.NaN(), 0},
	}
	for _, tt := range tests {
		b.Rand = fixed(tt.rand)
		if got := b.Delay(3); got != tt.want {
			t.Errorf("%s: Delay(3) = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestBackoffZeroRandIsZero(t *testing.T) {
	t.Parallel()
	b := classify.Backoff{Rand: fixed(0)}
	for _, attempt := range []int{1, 2, 10, 1000} {
		if got := b.Delay(attempt); got != 0 {
			t.Errorf("Delay(%d) = %v, want 0", attempt, got)
		}
	}
}

func TestBackoffHugeAttemptsDoNotOverflow(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		b    classify.Backoff
	}{
		{"default", classify.Backoff{Rand: fixed(0.999999)}},
		{"max near int64", classify.Backoff{Base: time.Second, Max: math.MaxInt64, Rand: fixed(0.999999)}},
		{"rand at one", classify.Backoff{Base: time.Nanosecond, Max: math.MaxInt64, Rand: fixed(1)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			maxDelay := tt.b.Max
			if maxDelay == 0 {
				maxDelay = classify.DefaultBackoffMax
			}
			prev := time.Duration(0)
			for _, attempt := range []int{30, 62, 63, 64, 65, 100, 1 << 20, math.MaxInt} {
				got := tt.b.Delay(attempt)
				if got < prev || got > maxDelay || got <= 0 {
					t.Errorf("Delay(%d) = %v; want in (0, %v] and not below Delay of a smaller attempt (%v)", attempt, got, maxDelay, prev)
				}
				prev = got
			}
		})
	}
}

func TestBackoffDefaults(t *testing.T) {
	t.Parallel()
	zero := classify.Backoff{Rand: fixed(0.999999)}
	def := classify.DefaultBackoff
	def.Rand = zero.Rand
	for _, attempt := range []int{0, 1, 5, 20} {
		if z, d := zero.Delay(attempt), def.Delay(attempt); z != d {
			t.Errorf("Delay(%d): zero Backoff %v, DefaultBackoff %v", attempt, z, d)
		}
	}
	if got := zero.Delay(0); !near(got, time.Second) {
		t.Errorf("Delay(0) = %v, want attempt 0 treated as 1 (just under 1s)", got)
	}
	if got := zero.Delay(50); !near(got, 5*time.Minute) {
		t.Errorf("Delay(50) = %v, want just under 5m", got)
	}
}

func TestBackoffBaseAboveMax(t *testing.T) {
	t.Parallel()
	b := classify.Backoff{Base: time.Hour, Max: time.Minute, Rand: fixed(0.5)}
	if got := b.Delay(1); got != 30*time.Second {
		t.Errorf("Delay(1) = %v, want 30s (half of Max)", got)
	}
}

func TestBackoffDelayAtLeast(t *testing.T) {
	t.Parallel()
	b := classify.Backoff{Base: time.Second, Max: time.Minute, Rand: fixed(0.5)}
	tests := []struct {
		name    string
		attempt int
		floor   time.Duration
		want    time.Duration
	}{
		{"floor wins", 1, 10 * time.Second, 10 * time.Second},
		{"backoff wins", 5, time.Second, 8 * time.Second},
		{"no floor", 2, 0, time.Second},
		{"floor beyond max is honoured", 1, 2 * time.Minute, 2 * time.Minute},
	}
	for _, tt := range tests {
		if got := b.DelayAtLeast(tt.attempt, tt.floor); got != tt.want {
			t.Errorf("%s: DelayAtLeast(%d, %v) = %v, want %v", tt.name, tt.attempt, tt.floor, got, tt.want)
		}
	}
}
