package deadletter

import (
	"strings"

	"github.com/sluicehq/sluice/pkg/classify"
	"github.com/sluicehq/sluice/pkg/messages"
)

// Replayable reports whether the replayer re-embeds a dead letter of this
// disposition and error class on its own, once its next_retry_at has
// passed: a retry disposition and an exhausted transient class
// (classify.ExhaustedTransientClasses). It is the one definition of what
// the replayer owes: the replayer's selection, the
// sluice_dlq_ready_to_replay gauge, `sluice dlq stats` and the console's
// readiness all read it, the queries through ReplayableSQL, so the
// replay-stalled alert sees a stalled drain of any of them.
func Replayable(disposition, class string) bool {
	return disposition == messages.DispositionRetry && classify.IsExhaustedTransient(class)
}

// ReplayableSQL is Replayable as a condition on the disposition and
// error_class columns of a dead_letters row. It is built from constants
// only, never from input.
func ReplayableSQL() string {
	classes := classify.ExhaustedTransientClasses()
	for i, c := range classes {
		classes[i] = "'" + c + "'"
	}
	return "(disposition = '" + messages.DispositionRetry + "' AND error_class IN (" + strings.Join(classes, ", ") + "))"
}
