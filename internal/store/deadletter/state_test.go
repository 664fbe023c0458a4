package deadletter_test

import (
	"context"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/dev/testenv"
	"github.com/sluicehq/sluice/internal/store/deadletter"
)

// Every dead letter is in exactly one state: the one StateSQL names is
// the only one State.Where selects it by, for every combination of the
// columns a state is derived from.
func TestStateInSQLAndWhereAgree(t *testing.T) {
	t.Parallel()
	pool := testenv.NewDatabase(t).Pool
	now := time.Now()
	failed := now.Add(-time.Hour)
	before, after := failed.Add(-time.Minute), failed.Add(time.Minute)
	past, future := now.Add(-time.Minute), now.Add(time.Hour)
	for _, tc := range []struct {
		resolved, replayed, next *time.Time
		want                     deadletter.State
	}{
		{&now, nil, &past, deadletter.StateResolved},
		{&now, &after, nil, deadletter.StateResolved},
		{nil, &after, &past, deadletter.StateDispatched},
		{nil, &failed, nil, deadletter.StateDispatched},
		{nil, &before, nil, deadletter.StateManual},
		{nil, nil, nil, deadletter.StateManual},
		{nil, nil, &past, deadletter.StateReady},
		{nil, &before, &past, deadletter.StateReady},
		{nil, nil, &future, deadletter.StateBackingOff},
	} {
		const row = ` FROM (VALUES ($1::timestamptz, $2::timestamptz, $3::timestamptz, $4::timestamptz))
			AS d(resolved_at, replayed_at, last_failed_at, next_retry_at)`
		var got deadletter.State
		if err := pool.QueryRow(context.Background(), `SELECT `+deadletter.StateSQL()+row,
			tc.resolved, tc.replayed, failed, tc.next).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != tc.want {
			t.Errorf("resolved %v, replayed %v, next retry %v: StateSQL %q, want %q", tc.resolved, tc.replayed, tc.next, got, tc.want)
		}
		for _, s := range append(deadletter.States, deadletter.StateOpen) {
			cond, ok := s.Where()
			if !ok {
				t.Fatalf("%s.Where: not a state", s)
			}
			var selected bool // NULL selects nothing, as in a WHERE clause
			if err := pool.QueryRow(context.Background(), `SELECT coalesce(`+cond+`, false)`+row,
				tc.resolved, tc.replayed, failed, tc.next).Scan(&selected); err != nil {
				t.Fatal(err)
			}
			want := s == tc.want || (s == deadletter.StateOpen && tc.want != deadletter.StateResolved)
			if selected != want {
				t.Errorf("%s: Where(%s) selects it: %v, want %v", tc.want, s, selected, want)
			}
		}
	}
	if deadletter.State("stuck").Valid() {
		t.Error(`State("stuck") is valid; want only the states and open`)
	}
}
