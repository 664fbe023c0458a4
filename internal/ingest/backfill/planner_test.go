package backfill_test

import (
	"context"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/sluicehq/sluice/internal/dev/testenv"
	"github.com/sluicehq/sluice/internal/ingest/backfill"
	"github.com/sluicehq/sluice/internal/platform/broker"
	"github.com/sluicehq/sluice/internal/store/generation"
	"github.com/sluicehq/sluice/pkg/messages"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// A queued chunk whose earlier publish JetStream still remembers, but
// whose message has left INGEST (consumed, or lost), is not taken as
// published on the deduplicated PubAck: the planner sends it again under
// a new Nats-Msg-Id, and only then removes it from the queue.
func TestPlannerRepublishesAChunkWhoseFirstCopyIsGone(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testenv.NewDatabase(t).Pool
	_, js := testenv.NewJetStream(t, broker.Topology{})
	created, err := generation.New(pool).Create(ctx, generation.Spec{Model: "m", Dims: 4,
		Chunking: generation.Chunking{Size: 400, Overlap: 0, Unit: "chars"}}, generation.Request{By: "test", Reason: "r", Execute: true})
	if err != nil {
		t.Fatal(err)
	}
	hash, err := messages.ContentHash("a chunk", nil)
	if err != nil {
		t.Fatal(err)
	}
	owed := generation.Owed{Generation: created.Generation, DocID: "d", ChunkIndex: 0, Version: 1, ContentHash: hash, SourceID: "s"}
	if err := generation.Requeue(ctx, pool, []generation.Owed{owed}); err != nil {
		t.Fatal(err)
	}
	if err := pool.QueryRow(ctx, `SELECT id FROM generation_backfill_queue`).Scan(&owed.ID); err != nil {
		t.Fatal(err)
	}

	// An earlier publish whose queue row was never removed (the planner
	// died first), then taken out of the stream.
	body, err := backfill.Encode(owed)
	if err != nil {
		t.Fatal(err)
	}
	first, err := js.Publish(ctx, messages.BackfillSubject("s"), body, jetstream.WithMsgID(backfill.MsgID(owed)))
	if err != nil {
		t.Fatal(err)
	}
	stream, err := js.Stream(ctx, broker.IngestStream)
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.DeleteMsg(ctx, first.Sequence); err != nil {
		t.Fatal(err)
	}

	if err := backfill.NewPlanner(backfill.Config{}, backfill.Deps{Pool: pool, JS: js, Log: zerolog.Nop()}).Step(ctx); err != nil {
		t.Fatal(err)
	}
	info, err := stream.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != 1 {
		t.Fatalf("INGEST holds %d messages after the step; want the chunk published again", info.State.Msgs)
	}
	msg, err := stream.GetMsg(ctx, info.State.LastSeq)
	if err != nil {
		t.Fatal(err)
	}
	if id, want := msg.Header.Get(jetstream.MsgIDHeader), backfill.MsgID(owed)+":r1"; id != want {
		t.Errorf("published as %q, want %q", id, want)
	}
	if got, err := backfill.Decode(msg.Data); err != nil || got.DocID != owed.DocID || got.Generation != owed.Generation {
		t.Errorf("published %s: %+v, %v; want the queued chunk", msg.Data, got, err)
	}
	var queued int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM generation_backfill_queue`).Scan(&queued); err != nil {
		t.Fatal(err)
	}
	if queued != 0 {
		t.Errorf("%d rows still queued; want the published chunk removed", queued)
	}
}
