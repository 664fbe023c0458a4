package fleetbudget

import (
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/sluicehq/sluice/internal/provider/embedder"
)

// Two members configured alike agree on the budget even when only the
// busy one has heard the provider's lower limit and paces to it.
func TestMembersConfiguredAlikeAgreeBeforeTheProviderSpeaks(t *testing.T) {
	t.Parallel()
	now := time.Unix(1000, 0)
	clock := func() time.Time { return now }
	member := func(b *embedder.Budget) *Member {
		m, err := New(Config{Key: "k", Service: "consumer"}, Deps{Budget: b, Log: zerolog.Nop(), Now: clock})
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	busy := embedder.NewBudget(600, 1_000_000, clock, zerolog.Nop())
	busy.Observe(embedder.RateLimits{Requests: embedder.RateLimit{Limit: 300, Remaining: 300, Reset: time.Second}})
	idle := embedder.NewBudget(600, 1_000_000, clock, zerolog.Nop())
	now = now.Add(2 * time.Second)
	busyEntry, idleEntry := member(busy).entry(), member(idle).entry()

	if problems := (Fleet{"k": {busyEntry, idleEntry}}).Problems(); len(problems) != 0 {
		t.Errorf("members configured alike are reported as %q", problems)
	}
	if busyEntry.RequestsPerMinute != 600 || busyEntry.PacedRequestsPerMinute != 300 {
		t.Errorf("the busy member reports %g requests a minute configured and %g paced, want 600 and 300",
			busyEntry.RequestsPerMinute, busyEntry.PacedRequestsPerMinute)
	}

	other := embedder.NewBudget(900, 1_000_000, clock, zerolog.Nop())
	if problems := (Fleet{"k": {busyEntry, member(other).entry()}}).Problems(); len(problems) != 1 {
		t.Errorf("members configured with 600 and 900 requests a minute are reported as %q, want one disagreement", problems)
	}
}
