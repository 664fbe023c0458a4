package bench

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/sluicehq/sluice/internal/ingest/publish"
	"github.com/sluicehq/sluice/internal/platform/broker"
	"github.com/sluicehq/sluice/pkg/messages"
)

// jetStreamCeiling is JetStream alone: every job published asynchronously
// to INGEST the way the producer does it (message id, expected stream,
// windows of unacknowledged publishes), then pulled in batches on the
// workers durable and acked the way the consumer does it. The rate is messages over publish plus consume time.
func (r *runner) jetStreamCeiling(ctx context.Context, jobs []benchJob) (ceilingRep, error) {
	if err := r.in.resetStreams(ctx, r.in.nats); err != nil {
		return ceilingRep{}, err
	}
	nc, js, err := connect(r.in.nats)
	if err != nil {
		return ceilingRep{}, err
	}
	defer nc.Close()
	meter := readCPU()
	start := time.Now()
	if err := publishWindowed(js, jobs); err != nil {
		return ceilingRep{}, err
	}
	if err := r.consumeAll(ctx, js, len(jobs)); err != nil {
		return ceilingRep{}, err
	}
	// The acks are plain publishes; a flush makes sure the server has them.
	if err := nc.Flush(); err != nil {
		return ceilingRep{}, err
	}
	return ceilingRep{rate: float64(len(jobs)) / time.Since(start).Seconds(), cpu: meter.since()}, nil
}

// publishWindowed publishes jobs asynchronously in windows of
// publish.DefaultWindow, waiting for each window's PubAcks as the
// producer does: unbounded, the client stalls under load.
func publishWindowed(js jetstream.JetStream, jobs []benchJob) error {
	subject := messages.ChunkSubject(benchSource)
	for lo := 0; lo < len(jobs); lo += publish.DefaultWindow {
		for _, j := range jobs[lo:min(lo+publish.DefaultWindow, len(jobs))] {
			msg := &nats.Msg{Subject: subject, Data: j.raw, Header: nats.Header{}}
			msg.Header.Set(jetstream.MsgIDHeader, messages.ChunkMsgID(j.job.DocID, j.job.ChunkIndex, j.job.DocVersion))
			if _, err := js.PublishMsgAsync(msg, jetstream.WithExpectStream(broker.IngestStream)); err != nil {
				return err
			}
		}
		select {
		case <-js.PublishAsyncComplete():
		case <-time.After(time.Minute):
			return fmt.Errorf("%d publishes unacknowledged after a minute", js.PublishAsyncPending())
		}
	}
	return nil
}

// consumeAll pulls and acks n messages on concurrency loops. It returns as
// soon as the n-th is acked, without waiting for fetches still open.
func (r *runner) consumeAll(ctx context.Context, js jetstream.JetStream, n int) error {
	cons, err := js.Consumer(ctx, broker.IngestStream, broker.WorkersConsumer)
	if err != nil {
		return err
	}
	var got atomic.Int64
	done := make(chan struct{})
	var once sync.Once
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for range concurrency {
		go func() {
			for ctx.Err() == nil {
				batch, err := cons.Fetch(batchSize, jetstream.FetchMaxWait(250*time.Millisecond))
				if err != nil {
					continue
				}
				for m := range batch.Messages() {
					_ = m.Ack()
					if got.Add(1) == int64(n) {
						once.Do(func() { close(done) })
					}
				}
			}
		}()
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("consumed %d of %d messages", got.Load(), n)
	}
}
