package deadletter_test

import (
	"context"
	"testing"

	"github.com/sluicehq/sluice/internal/dev/testenv"
	"github.com/sluicehq/sluice/internal/store/deadletter"
	"github.com/sluicehq/sluice/pkg/classify"
	"github.com/sluicehq/sluice/pkg/messages"
)

// The replayer replays retry dead letters of both exhausted transient
// classes and nothing else, and the SQL every count uses says the same as
// the Go the replayer uses, for every disposition and class.
func TestReplayableInGoAndSQL(t *testing.T) {
	t.Parallel()
	dispositions := []string{messages.DispositionRetry, messages.DispositionQuarantine, messages.DispositionAmbiguous,
		messages.DispositionEscalate}
	classes := []string{classify.ClassTransientExhausted, classify.ClassTimeoutExhausted, classify.ClassAmbiguousExhausted,
		classify.ClassReplayExhausted, classify.ClassBadRequest, classify.ClassPolicyViolation, classify.ClassRateLimited}
	pool := testenv.NewDatabase(t).Pool
	for _, d := range dispositions {
		for _, c := range classes {
			want := d == messages.DispositionRetry && (c == classify.ClassTransientExhausted || c == classify.ClassTimeoutExhausted)
			if got := deadletter.Replayable(d, c); got != want {
				t.Errorf("Replayable(%s, %s) = %v, want %v", d, c, got, want)
			}
			var got bool
			if err := pool.QueryRow(context.Background(), `SELECT `+deadletter.ReplayableSQL()+
				` FROM (VALUES ($1::text, $2::text)) AS t(disposition, error_class)`, d, c).Scan(&got); err != nil {
				t.Fatal(err)
			}
			if got != want {
				t.Errorf("ReplayableSQL on (%s, %s) = %v, want %v", d, c, got, want)
			}
		}
	}
}
