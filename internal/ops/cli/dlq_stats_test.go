package cli_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/dev/testenv"
	"github.com/sluicehq/sluice/pkg/messages"
)

// seedStatsFixture seeds unresolved dead letters of three classes: four
// transient_exhausted (two due, one backing off for 30m, one already
// replayed) at 6 attempts, two bad_request at 1, one ambiguous at 3; and
// one resolved. It returns the environment and the seeding instant.
func seedStatsFixture(t *testing.T) (map[string]string, time.Time) {
	t.Helper()
	db := testenv.NewDatabase(t)
	const te, retry = "transient_exhausted", messages.DispositionRetry
	now := seedDLRows(t, db.Pool,
		dlRow{id: "t1", source: "a", class: te, disposition: retry, attempts: 6, firstAgo: 5 * time.Hour, lastAgo: 4 * time.Hour, retryIn: dlDur(-time.Hour)},
		dlRow{id: "t2", source: "b", class: te, disposition: retry, attempts: 6, lastAgo: 3 * time.Hour, retryIn: dlDur(-2 * time.Hour)},
		dlRow{id: "t3", source: "a", class: te, disposition: retry, attempts: 6, lastAgo: time.Hour, retryIn: dlDur(30 * time.Minute)},
		dlRow{id: "t4", source: "a", class: te, disposition: retry, attempts: 6, lastAgo: 10 * time.Minute, retryIn: dlDur(-time.Minute), replayedAgo: dlDur(time.Minute)},
		dlRow{id: "t5", source: "a", class: te, disposition: retry, attempts: 6, lastAgo: 20 * time.Hour, retryIn: dlDur(-time.Hour), resolved: true},
		dlRow{id: "q1", source: "a", class: "bad_request", lastAgo: 2 * time.Hour},
		dlRow{id: "q2", source: "c", class: "bad_request", firstAgo: 9 * time.Hour, lastAgo: 30 * time.Minute},
		dlRow{id: "m1", source: "c", class: "ambiguous_exhausted", disposition: messages.DispositionAmbiguous, attempts: 3, lastAgo: time.Hour},
	)
	env := map[string]string{"DATABASE_URL": db.URL}
	return env, now
}

func TestDLQStatsJSON(t *testing.T) {
	t.Parallel()
	env, now := seedStatsFixture(t)
	var st struct {
		Unresolved struct {
			Count       int       `json:"count"`
			Oldest      time.Time `json:"oldest_first_failed_at"`
			Newest      time.Time `json:"newest_last_failed_at"`
			AvgAttempts float64   `json:"avg_attempts"`
		} `json:"unresolved"`
		Resolved int `json:"resolved"`
		ByClass  []struct {
			ErrorClass  string  `json:"error_class"`
			Disposition string  `json:"disposition"`
			Count       int     `json:"count"`
			AvgAttempts float64 `json:"avg_attempts"`
		} `json:"by_class"`
		Replay struct {
			Ready       int       `json:"ready"`
			BackingOff  int       `json:"backing_off"`
			Dispatched  int       `json:"dispatched"`
			Unscheduled int       `json:"unscheduled"`
			NextDue     time.Time `json:"next_due_at"`
		} `json:"replay"`
	}
	sluiceDecode(t, env, &st, "dlq", "stats")
	u := st.Unresolved
	// 4×6 + 2×1 + 3 attempts over 7 dead letters.
	if u.Count != 7 || u.AvgAttempts != 4.14 || st.Resolved != 1 {
		t.Errorf("unresolved = %+v, resolved = %d; want 7 at 4.14 attempts, 1 resolved", u, st.Resolved)
	}
	if !u.Oldest.Equal(now.Add(-9*time.Hour)) || !u.Newest.Equal(now.Add(-10*time.Minute)) {
		t.Errorf("oldest %v newest %v; want 9h and 10m before %v", u.Oldest, u.Newest, now)
	}
	got := fmt.Sprint(st.ByClass)
	want := "[{transient_exhausted retry 4 6} {bad_request quarantine 2 1} {ambiguous_exhausted ambiguous 1 3}]"
	if got != want {
		t.Errorf("by class = %s, want %s", got, want)
	}
	r := st.Replay
	if r.Ready != 2 || r.BackingOff != 1 || r.Dispatched != 1 || r.Unscheduled != 0 || !r.NextDue.Equal(now.Add(30*time.Minute)) {
		t.Errorf("replay readiness = %+v; want 2 ready, 1 backing off (due %v), 1 dispatched", r, now.Add(30*time.Minute))
	}
}

func TestDLQStatsText(t *testing.T) {
	t.Parallel()
	env, _ := seedStatsFixture(t)
	code, out, errOut := sluice(t, env, "dlq", "stats")
	if code != 0 {
		t.Fatalf("dlq stats: exit %d, %s", code, errOut)
	}
	if f := rowFields(t, out, "transient_exhausted"); f[1] != "retry" || f[2] != "4" || f[len(f)-2] != "6.0" {
		t.Errorf("text row %q", f)
	}
	if f := rowFields(t, out, "total"); f[1] != "7" || f[len(f)-2] != "4.1" {
		t.Errorf("text total %q", f)
	}
	if f := rowFields(t, out, "  ready now"); f[2] != "2" {
		t.Errorf("text ready %q", f)
	}
	if f := rowFields(t, out, "  still backing off"); f[3] != "1" {
		t.Errorf("text backing off %q", f)
	}
	if f := rowFields(t, out, "resolved"); f[len(f)-1] != "1" {
		t.Errorf("text resolved %q", f)
	}
}

func TestDLQStatsOnEmptyDLQ(t *testing.T) {
	t.Parallel()
	db := testenv.NewDatabase(t)
	code, out, _ := sluice(t, map[string]string{"DATABASE_URL": db.URL}, "dlq", "stats", "--json")
	var st map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &st) != nil {
		t.Fatalf("exit %d, output %q", code, out)
	}
	if classes, ok := st["by_class"].([]any); !ok || len(classes) != 0 {
		t.Errorf("by_class = %v, want an empty array", st["by_class"])
	}
}

// Readiness counts every class the replayer replays, timeout_exhausted as
// well as transient_exhausted, and each row, like the total, names the
// most attempts any of its dead letters took beside the average.
func TestDLQStatsReadinessAndWorstAttempts(t *testing.T) {
	t.Parallel()
	db := testenv.NewDatabase(t)
	const retry = messages.DispositionRetry
	seedDLRows(t, db.Pool,
		dlRow{id: "t1", source: "a", class: "transient_exhausted", disposition: retry, attempts: 5, lastAgo: time.Hour, retryIn: dlDur(-time.Hour)},
		dlRow{id: "o1", source: "a", class: "timeout_exhausted", disposition: retry, attempts: 4, lastAgo: time.Hour, retryIn: dlDur(-time.Hour)},
		dlRow{id: "o2", source: "b", class: "timeout_exhausted", disposition: retry, attempts: 6, lastAgo: time.Hour, retryIn: dlDur(30 * time.Minute)},
		dlRow{id: "q1", source: "a", class: "bad_request", attempts: 1, lastAgo: time.Hour},
		dlRow{id: "q2", source: "b", class: "bad_request", attempts: 3, lastAgo: time.Hour},
		dlRow{id: "q3", source: "b", class: "bad_request", attempts: 1, lastAgo: time.Hour},
	)
	env := map[string]string{"DATABASE_URL": db.URL}
	var st struct {
		Unresolved struct {
			WorstAttempts int `json:"worst_attempts"`
		} `json:"unresolved"`
		ByClass []struct {
			ErrorClass    string  `json:"error_class"`
			Count         int     `json:"count"`
			AvgAttempts   float64 `json:"avg_attempts"`
			WorstAttempts int     `json:"worst_attempts"`
		} `json:"by_class"`
		Replay struct {
			ErrorClasses []string `json:"error_classes"`
			Ready        int      `json:"ready"`
			BackingOff   int      `json:"backing_off"`
		} `json:"replay"`
		Passes []struct {
			Gen    int `json:"replay_gen"`
			Failed int `json:"failed"`
		} `json:"replay_passes"`
	}
	sluiceDecode(t, env, &st, "dlq", "stats")
	// The three replayable dead letters failed once, at generation 0; the
	// quarantined ones never enter the replay passes.
	if len(st.Passes) != 1 || st.Passes[0].Gen != 0 || st.Passes[0].Failed != 3 {
		t.Errorf("replay passes %+v; want 3 failures at generation 0", st.Passes)
	}
	if got, want := fmt.Sprint(st.ByClass), "[{bad_request 3 1.67 3} {timeout_exhausted 2 5 6} {transient_exhausted 1 5 5}]"; got != want {
		t.Errorf("by class = %s, want %s", got, want)
	}
	if st.Unresolved.WorstAttempts != 6 {
		t.Errorf("unresolved worst attempts %d, want 6", st.Unresolved.WorstAttempts)
	}
	if r := st.Replay; fmt.Sprint(r.ErrorClasses) != "[transient_exhausted timeout_exhausted]" || r.Ready != 2 || r.BackingOff != 1 {
		t.Errorf("replay readiness %+v; want both exhausted transient classes, 2 ready (t1, o1), 1 backing off (o2)", r)
	}

	code, out, errOut := sluice(t, env, "dlq", "stats")
	if code != 0 {
		t.Fatalf("dlq stats: exit %d, %s", code, errOut)
	}
	if f := rowFields(t, out, "ERROR_CLASS"); f[len(f)-1] != "WORST_ATTEMPTS" {
		t.Errorf("text header %q", f)
	}
	if f := rowFields(t, out, "bad_request"); f[len(f)-2] != "1.7" || f[len(f)-1] != "3" {
		t.Errorf("text bad_request row %q; want average 1.7, worst 3", f)
	}
	if f := rowFields(t, out, "total"); f[len(f)-1] != "6" {
		t.Errorf("text total %q; want worst 6", f)
	}
	if !strings.Contains(out, "replay readiness (transient_exhausted, timeout_exhausted, unresolved") {
		t.Errorf("text readiness does not name both classes:\n%s", out)
	}
	if f := rowFields(t, out, "  ready now"); f[2] != "2" {
		t.Errorf("text ready %q", f)
	}
}
