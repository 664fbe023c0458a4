package replay_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/sluicehq/sluice/internal/failure/replay"
	"github.com/sluicehq/sluice/internal/platform/broker"
	"github.com/sluicehq/sluice/internal/store/deadletter"
	"github.com/sluicehq/sluice/pkg/messages"
)

// A replay whose job JetStream deduplicates against a message no longer
// in INGEST (an earlier dispatch of the same replay generation, consumed
// or lost) is not counted as dispatched on that PubAck: the job goes out
// again under a new Nats-Msg-Id, and INGEST holds it.
func TestReplayRepublishesAJobWhoseFirstCopyIsGone(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.seed(t, "s", letter{id: "dl-1", disposition: q, failedAgo: time.Minute})

	earlier := messages.ReplayMsgID("dl-1", 1)
	first, err := b.js.Publish(ctx, messages.ReplaySubject("s"), []byte("an earlier dispatch"), jetstream.WithMsgID(earlier))
	if err != nil {
		t.Fatal(err)
	}
	stream, err := b.js.Stream(ctx, broker.IngestStream)
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.DeleteMsg(ctx, first.Sequence); err != nil {
		t.Fatal(err)
	}

	p, err := replay.Execute(ctx, b.db.Pool, b.js, replay.Scope{Filter: deadletter.Filter{Source: "s"}, Limit: 10}, "again", "cli:tester")
	if err != nil || p.Dispatched != 1 {
		t.Fatalf("execute: %+v, %v; want 1 dispatched", p, err)
	}
	info, err := stream.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != 1 {
		t.Fatalf("INGEST holds %d messages; want the replay job", info.State.Msgs)
	}
	msg, err := stream.GetMsg(ctx, info.State.LastSeq)
	if err != nil {
		t.Fatal(err)
	}
	if id := msg.Header.Get(jetstream.MsgIDHeader); id != earlier+":r1" {
		t.Errorf("replay job published as %q, want %q", id, earlier+":r1")
	}
	job, err := messages.DecodeChunkJob(msg.Data)
	if err != nil || job.DeadLetterID != "dl-1" || job.ReplayGen != 1 {
		t.Errorf("replay job %+v, %v; want dead letter dl-1's generation 1", job, err)
	}
}
