package consumer_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluicehq/sluice/internal/dev/embedsim"
	"github.com/sluicehq/sluice/internal/platform/broker"
)

// A batch that takes longer than AckWait twice over — a slow embedder,
// then a commit that waits on a row lock — is heartbeated through both:
// JetStream never redelivers it, and it is stored once, after one
// delivery, though another worker stands by to take it.
func TestSlowEmbedAndCommitWaitOutlastAckWait(t *testing.T) {
	t.Parallel()
	const ackWait, stall = 3 * time.Second, 5 * time.Second
	o := options{ackWait: ackWait,
		sim: embedsim.Config{Faults: embedsim.Faults{Latency: embedsim.Latency{Dist: embedsim.LatencyFixed, Value: stall}}}}
	b := setup(t, o)
	const text = "a chunk whose batch outlasts its ack wait"
	b.produce("slow", map[string][]byte{"a.txt": []byte(text)})

	// The test holds the document's row lock, which the store transaction
	// takes first, so the commit waits on it.
	ctx := context.Background()
	tx, err := b.db.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, `SELECT 1 FROM documents FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	// A second worker stands by, idle: without heartbeats JetStream would
	// hand it the message once AckWait passed.
	b.startConsumer(o)
	b.reg = prometheus.NewRegistry() // the second worker's own metrics
	b.startConsumer(o)
	embedStart := time.Now()
	b.eventually(stall+30*time.Second, "the store transaction to wait on the lock", func() bool {
		return b.count(`SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`) > 0
	})
	if embedded := time.Since(embedStart); embedded < ackWait {
		t.Fatalf("the embed stage took %s, less than the %s ack wait", embedded, ackWait)
	}
	// The commit wait: the lock is held for longer than AckWait.
	<-time.After(stall)
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	b.waitSettled(30 * time.Second)

	if n := b.count(`SELECT count(*) FROM chunk_embeddings`); n != 1 {
		t.Errorf("%d vectors stored, want 1", n)
	}
	if n := b.count(`SELECT count(*) FROM outbox`); n != 0 {
		t.Errorf("%d dead letters", n)
	}
	if n := b.count(`SELECT attempts FROM ingest_manifest`); n != 1 {
		t.Errorf("stored after %d deliveries, want 1", n)
	}
	if n := b.sim.SeenCount(text); n != 1 {
		t.Errorf("the embedder saw the chunk %d times, want once", n)
	}
	cons, err := b.js.Consumer(ctx, broker.IngestStream, broker.WorkersConsumer)
	if err != nil {
		t.Fatal(err)
	}
	// The ack follows the commit, which waitSettled saw.
	var info *jetstream.ConsumerInfo
	b.eventually(10*time.Second, "the stored message's ack", func() bool {
		info, err = cons.Info(ctx)
		return err == nil && info.NumAckPending == 0
	})
	if info.Delivered.Consumer != 1 || info.NumRedelivered != 0 || info.NumAckPending != 0 {
		t.Errorf("JetStream made %d deliveries (%d redelivered, %d awaiting ack), want 1, none redelivered",
			info.Delivered.Consumer, info.NumRedelivered, info.NumAckPending)
	}
}
