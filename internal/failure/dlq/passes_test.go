package dlq_test

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/failure/dlq"
	"github.com/sluicehq/sluice/internal/store/deadletter"
	"github.com/sluicehq/sluice/pkg/messages"
)

// Four chunks fail and go to the replayer; two fail again on the first
// replay, and both again on the second: the DLQ has stopped draining,
// and the carryover gauge says so.
func TestReplayPassesShowAPlateau(t *testing.T) {
	t.Parallel()
	b := setupTriage(t)
	now := time.Now()
	retry := time.Now().Add(time.Hour)
	letter := func(native string, gen int, id int64, class string) dlq.Letter {
		l := newLetter("src", native, 0, id, now.Add(time.Duration(id)*time.Millisecond))
		l.Disposition, l.ErrorClass, l.ReplayGen, l.NextRetryAt = messages.DispositionRetry, class, gen, &retry
		return l
	}
	// A quarantined chunk never enters the replay passes.
	b.handle(t, letter("a", 0, 1, "transient_exhausted"), letter("b", 0, 2, "transient_exhausted"),
		letter("c", 0, 3, "timeout_exhausted"), letter("d", 0, 4, "transient_exhausted"), newLetter("src", "q", 0, 5, now))
	b.handle(t, letter("a", 1, 6, "transient_exhausted"), letter("b", 1, 7, "timeout_exhausted"))
	passes, err := deadletter.ReplayPasses(t.Context(), b.db.Pool, now.Add(-time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if len(passes) != 2 || passes[0].Failed != 4 || passes[1].Failed != 2 || passes[1].CarriedOver != 0.5 {
		t.Fatalf("passes %+v; want 4 failures at generation 0, then 2 (half carried over)", passes)
	}
	if got, _ := metricValue(t, b.reg, "sluice_dlq_replay_carryover", nil); got != 0.5 {
		t.Errorf("sluice_dlq_replay_carryover %v while draining, want 0.5", got)
	}
	b.handle(t, letter("a", 2, 8, "transient_exhausted"), letter("b", 2, 9, "transient_exhausted"))
	passes, err = deadletter.ReplayPasses(t.Context(), b.db.Pool, now.Add(-time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if deadletter.Carryover(passes) != 1 {
		t.Fatalf("passes %+v; want the last pass to carry everything over", passes)
	}
	if got, _ := metricValue(t, b.reg, "sluice_dlq_replay_carryover", nil); got != 1 {
		t.Errorf("sluice_dlq_replay_carryover %v on a plateau, want 1", got)
	}
}
