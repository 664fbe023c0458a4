package replay

import (
	"context"
	"errors"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/sluicehq/sluice/internal/broker"
	"github.com/sluicehq/sluice/pkg/messages"
)

// job is one replay job ready to publish.
type job struct {
	id, source, msgID string
	raw               []byte
}

// dispatch publishes replay jobs to ingest.replay.<source> and waits for
// every PubAck. It returns the dead letter ids dispatched and failed.
func dispatch(ctx context.Context, js jetstream.JetStream, jobs []job) (ok, failed []string, err error) {
	if len(jobs) == 0 {
		return nil, nil, nil
	}
	if _, err := broker.Stream(ctx, js, broker.IngestStream); err != nil {
		return nil, ids(jobs), err
	}
	futures := make([]jetstream.PubAckFuture, len(jobs))
	var errs []error
	for i, j := range jobs {
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

func ids(jobs []job) []string {
	out := make([]string, len(jobs))
	for i, j := range jobs {
		out[i] = j.id
	}
	return out
}
