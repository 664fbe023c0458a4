package pipeline

import (
	"time"

	"github.com/sluicehq/sluice/internal/store/manifest"
	"github.com/sluicehq/sluice/pkg/classify"
	"github.com/sluicehq/sluice/pkg/messages"
)

// The pipeline's decisions, as pure functions of what it knows: the I/O
// code gathers the facts, calls these, and carries out the answer.

// attempt is what routing a failed job depends on.
type attempt struct {
	decision classify.Decision
	// delivered counts the job's deliveries, from 1.
	delivered      int
	finalAttempt   bool
	holdOnThrottle bool
	// excludesHeld says the job's delivered count leaves out its held
	// deliveries (a live job: see screen), so that a held delivery costs
	// it nothing.
	excludesHeld bool
	replayGen    int
	budget       budget
	// parkRetryDelay is the replayer's delay for a parked transient
	// failure of generation 0; it doubles with each generation.
	parkRetryDelay time.Duration
	now            time.Time
}

// route is the decision for a failed job: another delivery after delay,
// or parked under parkedClass, replayable from nextRetryAt when set.
type route struct {
	retry bool
	// held marks a retry that is not the job's to pay for: its delivery
	// is recorded as held, which the delivery cap leaves out.
	held        bool
	delay       time.Duration
	parkedClass string
	nextRetryAt *time.Time
}

// routeFailure sends a failed job back for another delivery while its
// budget lasts, and parks it otherwise. Throttling (rate limited, breaker
// open) costs a job that holds on throttle nothing.
//
// An open breaker costs a live job nothing either, at any delivery: the
// breaker refused the call before any request carried the chunk, so the
// delivery measured the embedder's outage, not the chunk. Such a delivery
// is held, like one of a halted run: counted in the manifest's held
// deliveries, which the screen takes off JetStream's delivery count, since
// a redelivery always raises that count and no Nak leaves it alone. A
// request that reached the embedder and failed is spent, even the one
// that opened the breaker: otherwise a chunk that makes the embedder fail
// on every request would trip the breaker, be held, and come back
// forever. Consumers stop pulling while the breaker is open and probe it
// without a chunk (embedder.Resilient.WaitReady), so an outage spends at
// most the deliveries in flight when it began, however long it lasts.
func routeFailure(a attempt) route {
	d, b := a.decision, a.budget
	switch d.Disposition {
	case classify.Retry:
		if d.Class == classify.ClassCircuitOpen && a.excludesHeld {
			return route{retry: true, held: true, delay: b.backoff.DelayAtLeast(a.delivered, d.RetryAfter)}
		}
		throttled := d.Class == classify.ClassRateLimited || d.Class == classify.ClassCircuitOpen
		if (a.delivered < b.maxDeliveries && !a.finalAttempt) || (a.holdOnThrottle && throttled) {
			return route{retry: true, delay: b.backoff.DelayAtLeast(a.delivered, d.RetryAfter)}
		}
		class := classify.ClassTransientExhausted
		if d.Class == classify.ClassSoftTimeLimit || d.Class == classify.ClassTimeout {
			class = classify.ClassTimeoutExhausted
		}
		next := a.now.Add(a.parkRetryDelay << min(a.replayGen, 10))
		return route{parkedClass: class, nextRetryAt: &next}
	case classify.Ambiguous:
		if a.delivered <= b.ambiguousRetries && !a.finalAttempt {
			return route{retry: true, delay: b.backoff.DelayAtLeast(a.delivered, d.RetryAfter)}
		}
		return route{parkedClass: classify.ClassAmbiguousExhausted}
	}
	return route{parkedClass: d.Class}
}

// verdict is the screen's decision for one job.
type verdict int

const (
	// verdictLive: the job has work to do.
	verdictLive verdict = iota
	// verdictUnknown: no manifest row; the job was not published here.
	verdictUnknown
	// verdictSuperseded: a newer version replaced the chunk.
	verdictSuperseded
	// verdictRacedCommit: the job is newer than the document read; look
	// again shortly.
	verdictRacedCommit
	// verdictDuplicate: the chunk is already settled, or twice in the
	// batch.
	verdictDuplicate
	// verdictHold: the run is halted; wait without spending the budget.
	verdictHold
	// verdictRunCancelled: the run was cancelled; park the chunk.
	verdictRunCancelled
	// verdictOverCap: past the delivery cap; park the chunk.
	verdictOverCap
)

// sighting is what the screen knows about one job.
type sighting struct {
	state state
	chunk messages.ChunkJob
	// delivered counts the job's deliveries, held ones excepted.
	delivered     int
	replay        bool
	finalAttempt  bool
	maxDeliveries int
	// seen is set when the batch already holds a live job for the chunk.
	seen bool
}

// screenVerdict decides what the screen does with one job.
func screenVerdict(s sighting) verdict {
	st, c := s.state, &s.chunk
	switch {
	case st.docVersion == nil || st.version == nil:
		return verdictUnknown
	case c.DocVersion < *st.docVersion || c.DocVersion < *st.version || *st.status == manifest.Superseded:
		return verdictSuperseded
	case c.DocVersion > *st.docVersion:
		// The producer commits the document before publishing.
		return verdictRacedCommit
	case *st.status == manifest.Stored:
		return verdictDuplicate
	case *st.status == manifest.Parked && (!s.replay || c.ReplayGen <= int(*st.replayGen)):
		return verdictDuplicate
	case !s.replay && st.runHalted():
		return verdictHold
	case !s.replay && st.runCancelled():
		return verdictRunCancelled
	case !s.finalAttempt && s.delivered > s.maxDeliveries:
		// A worker died on the last allowed delivery; JetStream's higher
		// MaxDeliver gave us this one to park it in.
		return verdictOverCap
	case s.seen:
		// The same chunk twice in one batch (a re-publish): one is enough.
		return verdictDuplicate
	}
	return verdictLive
}

// parking is what a dead letter's terms depend on.
type parking struct {
	disposition classify.Disposition
	parkedClass string
	delivered   int
	replayGen   int
	maxReplays  int
}

// terms are a dead letter's disposition, error class and attempt count,
// and whether it keeps the failure's next retry time.
type terms struct {
	disposition string
	class       string
	attempts    int
	keepRetryAt bool
}

// deadLetterTerms maps a parked failure to its dead letter's terms: an
// exhausted budget is retried by the replayer, or quarantined as
// replay_exhausted once the chunk has used its replay generations; a
// permanent failure counts one attempt, whatever its deliveries.
func deadLetterTerms(p parking) terms {
	t := terms{disposition: string(p.disposition), class: p.parkedClass, attempts: p.delivered, keepRetryAt: true}
	switch p.parkedClass {
	case classify.ClassTransientExhausted, classify.ClassTimeoutExhausted:
		t.disposition = messages.DispositionRetry
		if p.replayGen >= p.maxReplays {
			t.disposition, t.class, t.keepRetryAt = messages.DispositionQuarantine, classify.ClassReplayExhausted, false
		}
	case classify.ClassAmbiguousExhausted:
		t.disposition = messages.DispositionAmbiguous
	}
	if p.disposition == classify.Quarantine || p.disposition == classify.Escalate {
		t.attempts = 1
	}
	t.attempts = max(t.attempts, 1)
	return t
}
