package pipeline

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/store/manifest"
	"github.com/sluicehq/sluice/internal/store/runs"
	"github.com/sluicehq/sluice/pkg/classify"
	"github.com/sluicehq/sluice/pkg/messages"
)

func TestRouteFailure(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	b := budget{maxDeliveries: 5, ambiguousRetries: 2,
		backoff: classify.Backoff{Base: time.Second, Max: time.Minute, Rand: func() float64 { return 0.5 }}}
	retry := func(class string) classify.Decision {
		return classify.Decision{Disposition: classify.Retry, Class: class}
	}
	at := func(d time.Duration) *time.Time { t := now.Add(d); return &t }
	for _, tc := range []struct {
		name string
		a    attempt
		want route
	}{
		{"transient within budget retries with backoff",
			attempt{decision: retry(classify.ClassServerError), delivered: 1},
			route{retry: true, delay: 500 * time.Millisecond}},
		{"retry-after is a floor on the delay",
			attempt{decision: classify.Decision{Disposition: classify.Retry, Class: classify.ClassRateLimited, RetryAfter: 7 * time.Second}, delivered: 2},
			route{retry: true, delay: 7 * time.Second}},
		{"transient on the last delivery parks, replayable after the park delay",
			attempt{decision: retry(classify.ClassServerError), delivered: 5},
			route{parkedClass: classify.ClassTransientExhausted, nextRetryAt: at(time.Minute)}},
		{"the park delay doubles with each replay generation",
			attempt{decision: retry(classify.ClassServerError), delivered: 5, replayGen: 3},
			route{parkedClass: classify.ClassTransientExhausted, nextRetryAt: at(8 * time.Minute)}},
		{"the park delay stops doubling after ten generations",
			attempt{decision: retry(classify.ClassServerError), delivered: 5, replayGen: 40},
			route{parkedClass: classify.ClassTransientExhausted, nextRetryAt: at(1024 * time.Minute)}},
		{"a final attempt parks at once",
			attempt{decision: retry(classify.ClassConnection), delivered: 1, finalAttempt: true},
			route{parkedClass: classify.ClassTransientExhausted, nextRetryAt: at(time.Minute)}},
		{"exhausted timeouts park as timeout_exhausted",
			attempt{decision: retry(classify.ClassTimeout), delivered: 5},
			route{parkedClass: classify.ClassTimeoutExhausted, nextRetryAt: at(time.Minute)}},
		{"exhausted soft time limits park as timeout_exhausted",
			attempt{decision: retry(classify.ClassSoftTimeLimit), delivered: 5},
			route{parkedClass: classify.ClassTimeoutExhausted, nextRetryAt: at(time.Minute)}},
		{"rate limited holds on throttle past the cap",
			attempt{decision: retry(classify.ClassRateLimited), delivered: 9, finalAttempt: true, holdOnThrottle: true},
			route{retry: true, delay: 30 * time.Second}},
		{"open breaker holds on throttle past the cap",
			attempt{decision: retry(classify.ClassCircuitOpen), delivered: 9, holdOnThrottle: true},
			route{retry: true, delay: 30 * time.Second}},
		{"open breaker at a live job's final delivery is held, not parked",
			attempt{decision: retry(classify.ClassCircuitOpen), delivered: 5, excludesHeld: true},
			route{retry: true, held: true, delay: 8 * time.Second}},
		{"open breaker within a live job's budget is held",
			attempt{decision: classify.Decision{Disposition: classify.Retry, Class: classify.ClassCircuitOpen, RetryAfter: 3 * time.Second}, delivered: 1, excludesHeld: true},
			route{retry: true, held: true, delay: 3 * time.Second}},
		{"open breaker past a live job's cap is held",
			attempt{decision: retry(classify.ClassCircuitOpen), delivered: 9, excludesHeld: true},
			route{retry: true, held: true, delay: 30 * time.Second}},
		{"a server error at a live job's final delivery parks",
			attempt{decision: retry(classify.ClassServerError), delivered: 5, excludesHeld: true},
			route{parkedClass: classify.ClassTransientExhausted, nextRetryAt: at(time.Minute)}},
		{"rate limited at a live job's final delivery parks",
			attempt{decision: retry(classify.ClassRateLimited), delivered: 5, excludesHeld: true},
			route{parkedClass: classify.ClassTransientExhausted, nextRetryAt: at(time.Minute)}},
		{"open breaker at a replay's final delivery parks: its held deliveries are not left out",
			attempt{decision: retry(classify.ClassCircuitOpen), delivered: 5},
			route{parkedClass: classify.ClassTransientExhausted, nextRetryAt: at(time.Minute)}},
		{"hold on throttle does not hold other transient failures",
			attempt{decision: retry(classify.ClassServerError), delivered: 5, holdOnThrottle: true},
			route{parkedClass: classify.ClassTransientExhausted, nextRetryAt: at(time.Minute)}},
		{"rate limited without hold on throttle parks at the cap",
			attempt{decision: retry(classify.ClassRateLimited), delivered: 5},
			route{parkedClass: classify.ClassTransientExhausted, nextRetryAt: at(time.Minute)}},
		{"ambiguous retries while deliveries are within its retries",
			attempt{decision: classify.Decision{Disposition: classify.Ambiguous, Class: classify.ClassUnknown}, delivered: 2},
			route{retry: true, delay: time.Second}},
		{"ambiguous parks past its retries",
			attempt{decision: classify.Decision{Disposition: classify.Ambiguous, Class: classify.ClassUnknown}, delivered: 3},
			route{parkedClass: classify.ClassAmbiguousExhausted}},
		{"ambiguous on a final attempt parks",
			attempt{decision: classify.Decision{Disposition: classify.Ambiguous, Class: classify.ClassUnknown}, delivered: 1, finalAttempt: true},
			route{parkedClass: classify.ClassAmbiguousExhausted}},
		{"quarantine parks at once under its own class",
			attempt{decision: classify.Decision{Disposition: classify.Quarantine, Class: classify.ClassBadRequest}, delivered: 1},
			route{parkedClass: classify.ClassBadRequest}},
		{"escalate parks at once under its own class",
			attempt{decision: classify.Decision{Disposition: classify.Escalate, Class: classify.ClassPolicyViolation}, delivered: 1, holdOnThrottle: true},
			route{parkedClass: classify.ClassPolicyViolation}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a := tc.a
			a.budget, a.parkRetryDelay, a.now = b, time.Minute, now
			got := routeFailure(a)
			if got.retry != tc.want.retry || got.held != tc.want.held || got.delay != tc.want.delay || got.parkedClass != tc.want.parkedClass ||
				!sameTime(got.nextRetryAt, tc.want.nextRetryAt) {
				t.Errorf("got %+v (next retry %v), want %+v (next retry %v)", got, got.nextRetryAt, tc.want, tc.want.nextRetryAt)
			}
		})
	}
}

func sameTime(a, b *time.Time) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Equal(*b)
}

func TestScreenVerdict(t *testing.T) {
	t.Parallel()
	i64 := func(v int64) *int64 { return &v }
	i32 := func(v int32) *int32 { return &v }
	st := func(s manifest.Status) *manifest.Status { return &s }
	run := func(s runs.Status) *runs.Status { return &s }
	// at is a manifest row at version 2, status s, replay generation 1,
	// of a document at version 2.
	at := func(s manifest.Status) state {
		return state{version: i64(2), docVersion: i64(2), status: st(s), replayGen: i32(1)}
	}
	withRun := func(s state, r runs.Status) state { s.runStatus = run(r); return s }
	job := messages.ChunkJob{DocID: "d", DocVersion: 2, ReplayGen: 1}
	older := job
	older.DocVersion = 1
	newer := job
	newer.DocVersion = 3
	nextGen := job
	nextGen.ReplayGen = 2
	for _, tc := range []struct {
		name string
		s    sighting
		want verdict
	}{
		{"no manifest row", sighting{state: state{docVersion: i64(2)}, chunk: job}, verdictUnknown},
		{"no document", sighting{state: state{version: i64(2), status: st(manifest.Pending)}, chunk: job}, verdictUnknown},
		{"pending within the cap is live", sighting{state: at(manifest.Pending), chunk: job, delivered: 1, maxDeliveries: 5}, verdictLive},
		{"older than the document", sighting{state: at(manifest.Pending), chunk: older}, verdictSuperseded},
		{"older than the manifest row", sighting{state: state{version: i64(3), docVersion: i64(2), status: st(manifest.Pending)}, chunk: job}, verdictSuperseded},
		{"superseded row", sighting{state: at(manifest.Superseded), chunk: job}, verdictSuperseded},
		{"newer than the document read", sighting{state: at(manifest.Pending), chunk: newer}, verdictRacedCommit},
		{"already stored", sighting{state: at(manifest.Stored), chunk: job}, verdictDuplicate},
		{"already stored, even as a replay", sighting{state: at(manifest.Stored), chunk: nextGen, replay: true}, verdictDuplicate},
		{"parked, redelivered", sighting{state: at(manifest.Parked), chunk: job}, verdictDuplicate},
		{"parked, replayed at the same generation", sighting{state: at(manifest.Parked), chunk: job, replay: true}, verdictDuplicate},
		{"parked, replayed at the next generation", sighting{state: at(manifest.Parked), chunk: nextGen, replay: true, maxDeliveries: 5}, verdictLive},
		{"halted run holds", sighting{state: withRun(at(manifest.Pending), runs.Halted), chunk: job, delivered: 9, maxDeliveries: 5}, verdictHold},
		{"halted run does not hold a replay", sighting{state: withRun(at(manifest.Parked), runs.Halted), chunk: nextGen, replay: true, maxDeliveries: 5}, verdictLive},
		{"cancelled run", sighting{state: withRun(at(manifest.Pending), runs.Cancelled), chunk: job}, verdictRunCancelled},
		{"running run is live", sighting{state: withRun(at(manifest.Pending), runs.Running), chunk: job, delivered: 1, maxDeliveries: 5}, verdictLive},
		{"past the cap", sighting{state: at(manifest.Pending), chunk: job, delivered: 6, maxDeliveries: 5}, verdictOverCap},
		{"at the cap is live", sighting{state: at(manifest.Pending), chunk: job, delivered: 5, maxDeliveries: 5}, verdictLive},
		{"a final attempt past the cap is live", sighting{state: at(manifest.Pending), chunk: job, delivered: 6, maxDeliveries: 5, finalAttempt: true}, verdictLive},
		{"twice in the batch", sighting{state: at(manifest.Pending), chunk: job, delivered: 1, maxDeliveries: 5, seen: true}, verdictDuplicate},
		{"past the cap outranks twice in the batch", sighting{state: at(manifest.Pending), chunk: job, delivered: 6, maxDeliveries: 5, seen: true}, verdictOverCap},
	} {
		if got := screenVerdict(tc.s); got != tc.want {
			t.Errorf("%s: verdict %d, want %d", tc.name, got, tc.want)
		}
	}
}

func TestDeadLetterTerms(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		p    parking
		want terms
	}{
		{"transient exhausted is retried by the replayer",
			parking{disposition: classify.Retry, parkedClass: classify.ClassTransientExhausted, delivered: 5, replayGen: 0, maxReplays: 3},
			terms{disposition: messages.DispositionRetry, class: classify.ClassTransientExhausted, attempts: 5, keepRetryAt: true}},
		{"timeout exhausted is retried by the replayer",
			parking{disposition: classify.Retry, parkedClass: classify.ClassTimeoutExhausted, delivered: 5, replayGen: 2, maxReplays: 3},
			terms{disposition: messages.DispositionRetry, class: classify.ClassTimeoutExhausted, attempts: 5, keepRetryAt: true}},
		{"transient exhausted past the replays is quarantined",
			parking{disposition: classify.Retry, parkedClass: classify.ClassTransientExhausted, delivered: 1, replayGen: 3, maxReplays: 3},
			terms{disposition: messages.DispositionQuarantine, class: classify.ClassReplayExhausted, attempts: 1}},
		{"ambiguous exhausted",
			parking{disposition: classify.Ambiguous, parkedClass: classify.ClassAmbiguousExhausted, delivered: 3, maxReplays: 3},
			terms{disposition: messages.DispositionAmbiguous, class: classify.ClassAmbiguousExhausted, attempts: 3, keepRetryAt: true}},
		{"quarantine counts one attempt",
			parking{disposition: classify.Quarantine, parkedClass: classify.ClassBadRequest, delivered: 4, maxReplays: 3},
			terms{disposition: messages.DispositionQuarantine, class: classify.ClassBadRequest, attempts: 1, keepRetryAt: true}},
		{"escalate counts one attempt",
			parking{disposition: classify.Escalate, parkedClass: classify.ClassPolicyViolation, delivered: 2, maxReplays: 3},
			terms{disposition: messages.DispositionEscalate, class: classify.ClassPolicyViolation, attempts: 1, keepRetryAt: true}},
		{"a delivery count of zero still counts one attempt",
			parking{disposition: classify.Retry, parkedClass: classify.ClassTransientExhausted, delivered: 0, maxReplays: 3},
			terms{disposition: messages.DispositionRetry, class: classify.ClassTransientExhausted, attempts: 1, keepRetryAt: true}},
	} {
		if got := deadLetterTerms(tc.p); got != tc.want {
			t.Errorf("%s: got %+v, want %+v", tc.name, got, tc.want)
		}
	}
}
