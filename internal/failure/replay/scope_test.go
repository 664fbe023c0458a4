package replay_test

import (
	"errors"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/failure/replay"
	"github.com/sluicehq/sluice/internal/store/deadletter"
)

func TestScopeValidate(t *testing.T) {
	t.Parallel()
	now := time.Now()
	for _, tc := range []struct {
		name  string
		scope replay.Scope
		ok    bool
	}{
		{"a source", replay.Scope{Filter: deadletter.Filter{Source: "wiki"}, Limit: 10}, true},
		{"a start time", replay.Scope{Filter: deadletter.Filter{Since: now}, Limit: 10}, true},
		{"everything", replay.Scope{Filter: deadletter.Filter{State: deadletter.StateReady, Detail: "503"}, Limit: 10}, false},
		{"no limit", replay.Scope{Filter: deadletter.Filter{Source: "wiki"}}, false},
		{"limit above the cap", replay.Scope{Filter: deadletter.Filter{Source: "wiki"}, Limit: replay.MaxLimit + 1}, false},
		{"unknown disposition", replay.Scope{Filter: deadletter.Filter{Source: "wiki", Disposition: "later"}, Limit: 1}, false},
		{"unknown state", replay.Scope{Filter: deadletter.Filter{Source: "wiki", State: "stuck"}, Limit: 1}, false},
		{"empty window", replay.Scope{Filter: deadletter.Filter{Since: now, Until: now}, Limit: 1}, false},
	} {
		err := tc.scope.Validate()
		if (err == nil) != tc.ok || (err != nil && !errors.Is(err, replay.ErrScope)) {
			t.Errorf("%s: Validate() = %v; want ok=%v, else ErrScope", tc.name, err, tc.ok)
		}
	}
}

func TestParseRate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want float64
		ok   bool
	}{
		{"", 0, true},
		{"50", 50, true},
		{"50/s", 50, true},
		{"600/m", 10, true},
		{"0.5/s", 0.5, true},
		{"0", 0, false},
		{"-3/s", 0, false},
		{"fast", 0, false},
		{"50/h", 0, false},
		{"NaN", 0, false},
		{"1e9/s", 0, false},
	} {
		got, err := replay.ParseRate(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("ParseRate(%q) = %v, %v; want %v, ok=%v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

func TestScopeRefusesEscalationsAndBadRates(t *testing.T) {
	t.Parallel()
	for _, s := range []replay.Scope{
		{Filter: deadletter.Filter{Source: "wiki", Disposition: "escalate"}, Limit: 1},
		{Filter: deadletter.Filter{Source: "wiki"}, Limit: 1, RatePerSecond: -1},
		{Filter: deadletter.Filter{Source: "wiki"}, Limit: 1, RatePerSecond: replay.MaxRatePerSecond + 1},
	} {
		if err := s.Validate(); !errors.Is(err, replay.ErrScope) {
			t.Errorf("Validate(%+v) = %v; want ErrScope", s, err)
		}
	}
}
