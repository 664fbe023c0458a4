package producer

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/sluicehq/sluice/internal/platform/broker"
	"github.com/sluicehq/sluice/internal/platform/wait"
	"github.com/sluicehq/sluice/internal/store/sources"
)

// s3EventsBatch is how many event notifications one pull takes.
const s3EventsBatch = 256

// s3EventsPull is the longest one pull of event notifications waits.
const s3EventsPull = time.Second

// s3EventsRetry is how long a follower waits after a failed pull.
const s3EventsRetry = 5 * time.Second

// s3EventsAckWait is how long an event notification taken by a follower
// waits for its acknowledgement before it is delivered again: longer
// than a run over a prefix's changes.
const s3EventsAckWait = 10 * time.Minute

// follow keeps the index in step with the prefix: a run at once, then
// one whenever an event notification captured in S3_EVENTS names an
// object under the prefix, and at least every poll (the reconciling
// listing, which catches what no event said). The events a run answers
// are acknowledged only after it succeeded, so an event is answered at
// least once; a run is incremental, so answering one twice fetches
// nothing twice.
func (s *s3Sync) follow(ctx context.Context, poll time.Duration) error {
	if s.rt.JS == nil {
		return fmt.Errorf("--follow with --s3 needs NATS, where the store's events are captured")
	}
	cons, err := s.rt.JS.CreateOrUpdateConsumer(ctx, broker.S3EventsStream, jetstream.ConsumerConfig{
		Durable: broker.S3EventsDurable(s.cfg.SourceID), Description: "sluice S3 source " + s.cfg.SourceID,
		FilterSubject: broker.S3EventSubjects, AckPolicy: jetstream.AckExplicitPolicy, AckWait: s3EventsAckWait,
		DeliverPolicy: jetstream.DeliverNewPolicy, MaxDeliver: -1})
	if err != nil {
		return fmt.Errorf("follow the events of %s: create the durable %s on %s (does the stream exist? run sluice nats setup): %w",
			s.loc, broker.S3EventsDurable(s.cfg.SourceID), broker.S3EventsStream, err)
	}
	name := s.cfg.SourceID
	for {
		held := s.awaitEvents(ctx, cons, poll)
		if ctx.Err() != nil {
			return nil
		}
		if err := sources.Followed(ctx, s.rt.Pool, name); err != nil && ctx.Err() == nil {
			s.rt.Log.Warn().Err(err).Msg("could not record the follower's wake-up")
		}
		s.source.Pending.WithLabelValues(name).Set(float64(len(held)))
		if err := s.run(ctx, oldestEvent(held)); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			s.rt.Log.Warn().Err(err).Str("source", name).Msg("S3 source run failed; its events stay unacknowledged and the next run tries again")
			continue
		}
		for _, m := range held {
			_ = m.Ack()
		}
		s.source.Pending.WithLabelValues(name).Set(0)
	}
}

// oldestEvent is when the oldest of the event notifications was captured
// in S3_EVENTS, moments after its change; zero for none.
func oldestEvent(held []jetstream.Msg) time.Time {
	var oldest time.Time
	for _, m := range held {
		if md, err := m.Metadata(); err == nil && (oldest.IsZero() || md.Timestamp.Before(oldest)) {
			oldest = md.Timestamp
		}
	}
	return oldest
}

// awaitEvents returns as soon as the follower has something to do, with
// the event notifications it took: at once the first time, then when an
// event names an object under the prefix, or after poll. Events of other
// sources are acknowledged as they come. A pull that fails (NATS away)
// is logged and tried again, the poll's listing coming meanwhile.
func (s *s3Sync) awaitEvents(ctx context.Context, cons jetstream.Consumer, poll time.Duration) []jetstream.Msg {
	if s.followed.IsZero() {
		s.followed = time.Now()
		return nil
	}
	deadline := time.Now().Add(poll)
	for {
		left := time.Until(deadline)
		if left <= 0 || ctx.Err() != nil {
			return nil
		}
		// A pull returns when its batch is full or its wait is over: a
		// short wait bounds how long an event waits for its run.
		batch, err := cons.Fetch(s3EventsBatch, jetstream.FetchMaxWait(min(left, s3EventsPull)))
		if err != nil {
			s.rt.Log.Warn().Err(err).Msg("could not take the S3 events; the reconciling listing runs every --follow-poll meanwhile")
			wait.Sleep(ctx, min(time.Until(deadline), s3EventsRetry), nil)
			continue
		}
		var held []jetstream.Msg
		touched := false
		for m := range batch.Messages() {
			held = append(held, m)
			touched = touched || s.loc.Touches(m.Data())
		}
		if touched {
			return held
		}
		for _, m := range held {
			_ = m.Ack()
		}
		if err := batch.Error(); err != nil && !errors.Is(err, context.DeadlineExceeded) {
			wait.Sleep(ctx, min(time.Until(deadline), s3EventsRetry), nil)
		}
	}
}
