package replay

import (
	"context"
	"errors"
	"time"

	"github.com/failsafe-go/failsafe-go/ratelimiter"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/sluicehq/sluice/internal/platform/broker"
	"github.com/sluicehq/sluice/pkg/messages"
)

// job is one replay job ready to publish.
type job struct {
	id, source, msgID string
	raw               []byte
}

// dispatch publishes replay jobs to ingest.replay.<source>, at most
// perSecond a second when it is positive, and waits for every PubAck. It
// returns the dead letter ids dispatched and failed.
func dispatch(ctx context.Context, js jetstream.JetStream, jobs []job, perSecond float64) (ok, failed []string, err error) {
	if len(jobs) == 0 {
		return nil, nil, nil
	}
	if _, err := broker.Stream(ctx, js, broker.IngestStream); err != nil {
		return nil, ids(jobs), err
	}
	limiter := newLimiter(perSecond)
	futures := make([]jetstream.PubAckFuture, len(jobs))
	var errs []error
	for i, j := range jobs {
		if limiter != nil {
			if err := limiter.AcquirePermit(ctx); err != nil {
				errs = append(errs, err)
				break
			}
		}
		msg := &nats.Msg{Subject: messages.ReplaySubject(j.source), Data: j.raw, Header: nats.Header{}}
		msg.Header.Set(jetstream.MsgIDHeader, j.msgID)
		if futures[i], err = js.PublishMsgAsync(msg); err != nil {
			errs = append(errs, err)
		}
	}
	for i, f := range futures {
		if f == nil {
			failed = append(failed, jobs[i].id)
			continue
		}
		select {
		case <-f.Ok():
			ok = append(ok, jobs[i].id)
		case err := <-f.Err():
			errs = append(errs, err)
			failed = append(failed, jobs[i].id)
		case <-ctx.Done():
			return ok, append(failed, ids(jobs[i:])...), ctx.Err()
		}
	}
	return ok, failed, errors.Join(errs...)
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
