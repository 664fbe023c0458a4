package runs_test

import (
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/store/runs"
)

func TestSettle(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	fresh, stale := now.Add(-10*time.Second), now.Add(-31*time.Second)
	run := func(st runs.Status, publishFinished bool, beat time.Time, pending, parked int) runs.Facts {
		return runs.Facts{Status: st, PublishFinished: publishFinished, LastBeat: beat, HeartbeatTimeout: 30 * time.Second,
			Now: now, Published: 7, Pending: pending, Parked: parked}
	}
	tests := []struct {
		name  string
		facts runs.Facts
		want  runs.Status
		ended bool
	}{
		{"publishing, heartbeat fresh, chunks pending", run(runs.Running, false, fresh, 3, 0), runs.Running, false},
		{"publishing, heartbeat fresh, nothing pending yet", run(runs.Running, false, fresh, 0, 0), runs.Running, false},
		{"producer gone, chunks still pending", run(runs.Running, false, stale, 3, 0), runs.Running, false},
		{"producer gone, every chunk settled", run(runs.Running, false, stale, 0, 0), runs.Interrupted, true},
		{"producer gone, settled with parked chunks", run(runs.Running, false, stale, 0, 2), runs.Interrupted, true},
		{"producer never beat, nothing pending", run(runs.Running, false, time.Time{}, 0, 0), runs.Interrupted, true},
		{"heartbeat exactly the timeout old is fresh", run(runs.Running, false, now.Add(-30*time.Second), 0, 0), runs.Running, false},
		{"publish finished, chunks pending", run(runs.Running, true, fresh, 1, 0), runs.Running, false},
		{"publish finished, all stored", run(runs.Running, true, fresh, 0, 0), runs.Completed, true},
		{"publish finished, producer since gone", run(runs.Running, true, stale, 0, 0), runs.Completed, true},
		{"publish finished, some parked", run(runs.Running, true, stale, 0, 2), runs.CompletedWithFailures, true},
		{"completed with failures, parked chunk replayed", run(runs.CompletedWithFailures, true, stale, 1, 1), runs.Running, false},
		{"completed with failures, parked chunk stored", run(runs.CompletedWithFailures, true, stale, 0, 0), runs.Completed, true},
		{"interrupted stays interrupted", run(runs.Interrupted, false, stale, 0, 1), runs.Interrupted, true},
		{"interrupted, a chunk replayed", run(runs.Interrupted, false, stale, 1, 0), runs.Interrupted, false},
		{"halted, producer gone", run(runs.Halted, false, stale, 0, 0), runs.Halted, true},
		{"halted, chunks held", run(runs.Halted, false, stale, 4, 0), runs.Halted, false},
		{"cancelled, chunks owed", run(runs.Cancelled, true, fresh, 2, 0), runs.Cancelled, false},
		{"failed, settled", run(runs.Failed, true, stale, 0, 0), runs.Failed, true},
	}
	for _, tt := range tests {
		got := runs.Settle(tt.facts)
		if got.Status != tt.want || got.Ended != tt.ended {
			t.Errorf("%s: %s, ended %v; want %s, ended %v", tt.name, got.Status, got.Ended, tt.want, tt.ended)
		}
		interrupts := got.Status == runs.Interrupted && tt.facts.Status != runs.Interrupted
		if interrupts != (got.Reason != "") {
			t.Errorf("%s: reason %q", tt.name, got.Reason)
		}
		if interrupts && !strings.Contains(got.Reason, "7 chunks") || interrupts && !strings.Contains(got.Reason, "run the producer again") {
			t.Errorf("%s: reason %q does not say what was published and what to do", tt.name, got.Reason)
		}
	}
}
