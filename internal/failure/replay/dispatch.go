package replay

import (
	"context"
	"fmt"
	"time"

	"github.com/failsafe-go/failsafe-go/ratelimiter"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/sluicehq/sluice/internal/platform/broker"
	"github.com/sluicehq/sluice/pkg/messages"
	"github.com/sluicehq/sluice/pkg/puback"
)

// job is one replay job ready to publish.
type job struct {
	id, source, msgID string
	raw               []byte
}

// maxRepublish bounds how often a dispatch sends a job again whose first
// copy is gone from INGEST; past it, the job counts as failed.
const maxRepublish = 3

// dispatch publishes replay jobs to ingest.replay.<source>, at most
// perSecond a second when it is positive, and waits for every PubAck. It
// returns the dead letter ids dispatched and failed.
//
// A job JetStream deduplicates is dispatched only while its first copy
// is still in INGEST. One whose copy is gone (consumed by an earlier
// dispatch of the same replay generation, or lost) is sent again under a
// new Nats-Msg-Id: a second copy of a replay is screened like the first.
func dispatch(ctx context.Context, js jetstream.JetStream, jobs []job, perSecond float64) (ok, failed []string, err error) {
	if len(jobs) == 0 {
		return nil, nil, nil
	}
	if _, err := broker.Stream(ctx, js, broker.IngestStream); err != nil {
		return nil, ids(jobs), err
	}
	msgs := make([]*nats.Msg, len(jobs))
	for i, j := range jobs {
		msgs[i] = &nats.Msg{Subject: messages.ReplaySubject(j.source), Data: j.raw, Header: nats.Header{}}
		msgs[i].Header.Set(jetstream.MsgIDHeader, j.msgID)
	}
	opts := []puback.Option{puback.RepublishGone(maxRepublish)}
	if limiter := newLimiter(perSecond); limiter != nil {
		opts = append(opts, puback.Paced(limiter.AcquirePermit))
	}
	acks, err := puback.NewSender(js, broker.IngestStream).Send(ctx, msgs, opts...)
	var first error
	for i, a := range acks {
		if a.Err == nil {
			ok = append(ok, jobs[i].id)
			continue
		}
		failed = append(failed, jobs[i].id)
		if first == nil {
			first = a.Err
		}
	}
	if err != nil {
		return ok, failed, err
	}
	if first != nil {
		return ok, failed, fmt.Errorf("%d jobs not dispatched, the first because: %w", len(failed), first)
	}
	return ok, failed, nil
}

// newLimiter returns a smooth limiter of perSecond permits a second, or
// nil for no limit.
func newLimiter(perSecond float64) ratelimiter.RateLimiter[any] {
	if perSecond <= 0 {
		return nil
	}
	return ratelimiter.NewSmoothWithMaxRate[any](time.Duration(float64(time.Second) / perSecond))
}

func ids(jobs []job) []string {
	out := make([]string, len(jobs))
	for i, j := range jobs {
		out[i] = j.id
	}
	return out
}
