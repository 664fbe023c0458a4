package embedder

import (
	"testing"
	"time"
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
	b := NewBudget(60, 600, func() time.Time { return now })
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
	b.Throttled()
	if r := b.Rate(); r != 30 {
		t.Errorf("rate after a 429 = %g/min, want 30", r)
	}
	if w := NewBudget(0, 0, nil).Reserve(1_000_000); w != 0 {
		t.Errorf("unlimited budget made a caller wait %v", w)
	}
}
