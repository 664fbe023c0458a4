package dlq

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/sluicehq/sluice/internal/ingest/pipeline"
	"github.com/sluicehq/sluice/internal/store/deadletter"
	"github.com/sluicehq/sluice/pkg/messages"
)

// Replayer drains recoverable dead letters: each chunk whose dead letter
// is Replayable (transient_exhausted, timeout_exhausted) is re-embedded
// through the ingest pipeline once its next_retry_at has passed. Success stores the vector, marks the manifest stored and
// resolves the dead letter in one transaction; another failure parks it
// again with replay_gen + 1, and after the pipeline's MaxReplays
// generations as replay_exhausted. Quarantined and escalated dead letters
// are never touched (its durable only sees dlq.retry.>).
type Replayer struct {
	pipe     *pipeline.Pipeline
	log      zerolog.Logger
	now      func() time.Time
	attempts int
	replays  *prometheus.CounterVec
}

// NewReplayer returns a replayer. maxDeliveries is the pipeline's delivery
// cap: a replay gets one attempt per generation, so a transient failure
// parks the next generation at once instead of holding the DLQ message.
func NewReplayer(pipe *pipeline.Pipeline, maxDeliveries int, log zerolog.Logger, reg prometheus.Registerer, now func() time.Time) *Replayer {
	if now == nil {
		now = time.Now
	}
	r := &Replayer{pipe: pipe, log: log, now: now, attempts: maxDeliveries,
		replays: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_replays_total",
			Help: "Dead letters replayed by the replayer, by outcome (stored, parked, skipped, deferred).",
		}, []string{"outcome"})}
	for _, outcome := range []string{"stored", "parked", "skipped", "deferred"} {
		r.replays.WithLabelValues(outcome)
	}
	if reg != nil {
		reg.MustRegister(r.replays)
	}
	return r
}

// Handle is the replayer's dlq.Handler.
func (r *Replayer) Handle(ctx context.Context, l Letter) (Result, error) {
	if !deadletter.Replayable(l.Disposition, l.ErrorClass) {
		r.replays.WithLabelValues("skipped").Inc()
		return Result{}, nil
	}
	if l.NextRetryAt != nil {
		if wait := l.NextRetryAt.Sub(r.now()); wait > 0 {
			return Result{Retry: true, Delay: wait}, nil
		}
	}
	raw, err := deadletter.ReplayJob(l.DeadLetter, "")
	if err != nil {
		// The payload is not a job we can re-drive; an operator must look.
		r.log.Error().Err(err).Str("dead_letter_id", l.DeadLetterID).Msg("dead letter cannot be replayed")
		r.replays.WithLabelValues("skipped").Inc()
		return Result{}, nil
	}
	job := &pipeline.Job{Raw: raw, MsgID: messages.ReplayMsgID(l.DeadLetterID, l.ReplayGen+1), Delivered: r.attempts,
		Replay: true, HoldOnThrottle: true, FinalAttempt: true}
	if err := r.pipe.Process(ctx, []*pipeline.Job{job}); err != nil {
		return Result{}, err
	}
	switch job.Outcome {
	case pipeline.Stored:
		r.replays.WithLabelValues("stored").Inc()
	case pipeline.Parked:
		r.replays.WithLabelValues("parked").Inc()
	case pipeline.Retry:
		// Throttled, or a store that must be retried as a whole: wait and
		// try the same generation again.
		r.replays.WithLabelValues("deferred").Inc()
		return Result{Retry: true, Delay: job.Delay}, nil
	default:
		r.replays.WithLabelValues("skipped").Inc()
	}
	r.log.Info().Str("dead_letter_id", l.DeadLetterID).Int("replay_gen", l.ReplayGen+1).Str("outcome", job.Outcome.String()).Msg("replayed")
	return Result{}, nil
}
