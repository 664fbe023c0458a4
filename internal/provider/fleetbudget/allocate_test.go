package fleetbudget

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/provider/embedder"
)

func TestAllocate(t *testing.T) {
	t.Parallel()
	hungry := Claim{Hungry: true}
	idle := Claim{}
	tests := []struct {
		name   string
		claims []Claim
		want   []float64
	}{
		{"no member", nil, nil},
		{"one member takes the whole budget", []Claim{hungry}, []float64{1}},
		{"hungry members split it evenly", []Claim{hungry, hungry, hungry, hungry}, []float64{0.25, 0.25, 0.25, 0.25}},
		{"a fifth hungry member shrinks every share", []Claim{hungry, hungry, hungry, hungry, hungry}, []float64{0.2, 0.2, 0.2, 0.2, 0.2}},
		// An idle replayer keeps IdleFloor of an equal share (0.02); four
		// busy consumers share the rest.
		{"an idle member keeps a floor", []Claim{hungry, hungry, hungry, hungry, idle}, []float64{0.245, 0.245, 0.245, 0.245, 0.02}},
		{"an idle member's claim is what it used with headroom", []Claim{hungry, {Used: 0.1}}, []float64{0.85, 0.15}},
		{"a claim above an equal share is capped at it", []Claim{hungry, {Used: 0.9}}, []float64{0.5, 0.5}},
		// Nobody is hungry: what the claims leave is spread evenly.
		{"every member idle shares evenly", []Claim{idle, idle}, []float64{0.5, 0.5}},
		{"leftover is spread evenly", []Claim{{Used: 0.1}, {Used: 0.2}}, []float64{0.15 + 0.275, 0.3 + 0.275}},
	}
	for _, tt := range tests {
		got := Allocate(tt.claims)
		if len(got) != len(tt.want) {
			t.Fatalf("%s: %v, want %v", tt.name, got, tt.want)
		}
		sum := 0.0
		wrong := false
		for i := range got {
			sum += got[i]
			wrong = wrong || math.Abs(got[i]-tt.want[i]) > 1e-9
		}
		if wrong {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
		if len(got) > 0 && math.Abs(sum-1) > 1e-9 {
			t.Errorf("%s: shares add up to %g, want exactly the budget", tt.name, sum)
		}
	}
}

func TestFallbackIsTheBudgetOverTheMembersLastSeenNeverMore(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name      string
		current   float64
		lastKnown int
		want      float64
	}{
		{"busy member of five", 0.3, 5, 0.2},
		{"busy member of four", 1, 4, 0.25},
		{"alone", 1, 1, 1},
		{"before any count", 1, 0, 1},
		// Cut off alone, an idle member must not jump to an equal share:
		// the others keep theirs and take up its own once it expires.
		{"idle member at the floor", IdleFloor / 5, 5, IdleFloor / 5},
		{"exactly an equal share", 0.25, 4, 0.25},
	} {
		if got := Fallback(tt.current, tt.lastKnown); got != tt.want {
			t.Errorf("%s: Fallback(%g, %d) = %g, want %g", tt.name, tt.current, tt.lastKnown, got, tt.want)
		}
	}
}

func TestClaim(t *testing.T) {
	t.Parallel()
	before := embedder.Stats{Requests: 100, Tokens: 10_000, Waited: time.Second}
	tests := []struct {
		name    string
		now     embedder.Stats
		minutes float64
		rpm     float64
		tpm     float64
		want    Claim
	}{
		{"requests set the use", embedder.Stats{Requests: 160, Tokens: 10_000, Waited: time.Second}, 0.5, 600, 1_000_000, Claim{Used: 0.2}},
		{"tokens set it when scarcer", embedder.Stats{Requests: 110, Tokens: 110_000, Waited: time.Second}, 1, 600, 200_000, Claim{Used: 0.5}},
		{"waiting a quarter of the time is hungry", embedder.Stats{Requests: 100, Tokens: 10_000, Waited: 16 * time.Second}, 1, 600, 0, Claim{Hungry: true}},
		{"waiting less is not", embedder.Stats{Requests: 100, Tokens: 10_000, Waited: 14 * time.Second}, 1, 600, 0, Claim{}},
		{"requests queued for a quarter of the time are hungry", embedder.Stats{Requests: 100, Tokens: 10_000, Waited: time.Second, Queued: 16 * time.Second}, 1, 600, 0, Claim{Hungry: true}},
		{"an unlimited budget is never used up", embedder.Stats{Requests: 200, Tokens: 20_000, Waited: time.Second}, 1, 0, 0, Claim{}},
	}
	for _, tt := range tests {
		got := claim(tt.now, before, tt.minutes, tt.rpm, tt.tpm, DefaultHungryWait)
		if math.Abs(got.Used-tt.want.Used) > 1e-9 || got.Hungry != tt.want.Hungry {
			t.Errorf("%s: %+v, want %+v", tt.name, got, tt.want)
		}
	}
}

func TestFingerprintHidesTheKey(t *testing.T) {
	t.Parallel()
	a := Fingerprint("https://api.openai.com/v1", "sk-secret")
	if a != Fingerprint("https://api.openai.com/v1", "sk-secret") {
		t.Fatal("the same provider and key give two budget keys")
	}
	if a == Fingerprint("https://api.openai.com/v1", "sk-other") || a == Fingerprint("https://example.com/v1", "sk-secret") {
		t.Fatal("another key or URL gives the same budget key")
	}
	if err := checkKey(a); err != nil {
		t.Fatalf("the fingerprint %q is not a valid key: %v", a, err)
	}
	if len(a) != 17 {
		t.Fatalf("fingerprint %q: want p and 16 hex digits", a)
	}
}

func TestFleetProblems(t *testing.T) {
	t.Parallel()
	member := func(id string, share, rpm float64) Entry {
		return Entry{Key: "k", Member: id, RequestsPerMinute: rpm, Share: share}
	}
	tests := []struct {
		name    string
		entries []Entry
		want    string // a word of the one problem, or "" for none
	}{
		{"shares add up to the budget", []Entry{member("a", 0.75, 600), member("b", 0.25, 600)}, ""},
		{"shares below it", []Entry{member("a", 0.2, 600)}, ""},
		{"shares above it", []Entry{member("a", 0.75, 600), member("b", 0.5, 600)}, "1.250"},
		{"members disagree on the budget", []Entry{member("a", 0.5, 600), member("b", 0.5, 1200)}, "disagree"},
	}
	for _, tt := range tests {
		got := Fleet{"k": tt.entries}.Problems()
		switch {
		case tt.want == "" && len(got) != 0:
			t.Errorf("%s: problems %q, want none", tt.name, got)
		case tt.want != "" && (len(got) != 1 || !strings.Contains(got[0], tt.want)):
			t.Errorf("%s: problems %q, want one saying %q", tt.name, got, tt.want)
		}
	}
}

func TestPace(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name              string
		alloc, prev, want float64
		members           int
	}{
		{"a decrease is at once", 0.2, 0.25, 0.2, 5},
		{"an increase waits a heartbeat", 0.33, 0.25, 0.25, 4},
		{"an increase allocated twice is taken", 0.33, 0.33, 0.33, 4},
		{"a new member starts at the floor", 0.25, -1, 0.025, 4},
		{"a new member alone starts at the floor too", 1, -1, 0.1, 1},
		{"a new member never above its allocation", 0.01, -1, 0.01, 4},
	}
	for _, tt := range tests {
		if got := Pace(tt.alloc, tt.prev, tt.members); math.Abs(got-tt.want) > 1e-9 {
			t.Errorf("%s: Pace(%g, %g, %d) = %g, want %g", tt.name, tt.alloc, tt.prev, tt.members, got, tt.want)
		}
	}
}
