package puback_test

import (
	"context"
	"errors"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/sluicehq/sluice/internal/dev/testenv"
	"github.com/sluicehq/sluice/internal/platform/broker"
	"github.com/sluicehq/sluice/pkg/messages"
	"github.com/sluicehq/sluice/pkg/puback"
)

func TestMain(m *testing.M) { testenv.Main(m) }

func msg(id string) *nats.Msg {
	m := &nats.Msg{Subject: messages.ChunkSubject("s"), Data: []byte(id), Header: nats.Header{}}
	m.Header.Set(jetstream.MsgIDHeader, id)
	return m
}

// send publishes one message and returns its Ack.
func send(t *testing.T, s *puback.Sender, m *nats.Msg, opts ...puback.Option) puback.Ack {
	t.Helper()
	acks, err := s.Send(t.Context(), []*nats.Msg{m}, opts...)
	if err != nil || len(acks) != 1 {
		t.Fatalf("send %s: %v, %d acks", m.Header.Get(jetstream.MsgIDHeader), err, len(acks))
	}
	return acks[0]
}

// A deduplicated PubAck is success only while its first copy is in the
// stream; once that copy is gone the message is not published, unless
// RepublishGone sends it again under a new Nats-Msg-Id.
func TestSendVerifiesDeduplicatedPubAcks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, js := testenv.NewJetStream(t, broker.Topology{})
	stream, err := js.Stream(ctx, broker.IngestStream)
	if err != nil {
		t.Fatal(err)
	}
	s := puback.NewSender(js, broker.IngestStream)

	first := send(t, s, msg("a"))
	if first.Err != nil || first.Duplicate || first.Seq != 1 {
		t.Fatalf("first publish: %+v; want sequence 1, no duplicate", first)
	}
	if again := send(t, s, msg("a")); again.Err != nil || !again.Duplicate || again.Seq != 1 {
		t.Fatalf("publish again while the first copy is in the stream: %+v; want a verified duplicate of sequence 1", again)
	}

	if err := stream.DeleteMsg(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if gone := send(t, s, msg("a")); !errors.Is(gone.Err, puback.ErrGone) {
		t.Fatalf("publish again after the first copy was deleted: %+v; want ErrGone", gone)
	}
	renamed := send(t, s, msg("a"), puback.RepublishGone(2))
	if renamed.Err != nil || renamed.MsgID != "a:r1" || renamed.Duplicate {
		t.Fatalf("publish with RepublishGone after the first copy was deleted: %+v; want published as a:r1", renamed)
	}
	got, err := stream.GetMsg(ctx, renamed.Seq)
	if err != nil || got.Header.Get(jetstream.MsgIDHeader) != "a:r1" {
		t.Fatalf("message at sequence %d: %v, %v; want a:r1", renamed.Seq, got, err)
	}

	// A first copy in the middle of the stream, deleted out of order.
	for _, id := range []string{"b", "c"} {
		if a := send(t, s, msg(id)); a.Err != nil {
			t.Fatal(a.Err)
		}
	}
	b := send(t, s, msg("b"))
	if err := stream.DeleteMsg(ctx, b.Seq); err != nil {
		t.Fatal(err)
	}
	acks, err := s.Send(ctx, []*nats.Msg{msg("b"), msg("c"), msg("d")})
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(acks[0].Err, puback.ErrGone) || acks[1].Err != nil || !acks[1].Duplicate || acks[2].Err != nil || acks[2].Duplicate {
		t.Fatalf("b deleted, c kept, d new: %+v; want b gone, c a verified duplicate, d published", acks)
	}
}

// A pace that fails stops the batch: the messages after it carry its
// error and are not published.
func TestSendStopsWhenPaceFails(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, js := testenv.NewJetStream(t, broker.Topology{})
	stop := errors.New("no permit")
	n := 0
	pace := func(context.Context) error {
		if n++; n > 1 {
			return stop
		}
		return nil
	}
	acks, err := puback.NewSender(js, broker.IngestStream).Send(ctx, []*nats.Msg{msg("a"), msg("b"), msg("c")}, puback.Paced(pace))
	if err != nil {
		t.Fatal(err)
	}
	if acks[0].Err != nil || !errors.Is(acks[1].Err, stop) || !errors.Is(acks[2].Err, stop) {
		t.Fatalf("acks %+v; want a published, b and c refused by the pace", acks)
	}
	info, err := js.Stream(ctx, broker.IngestStream)
	if err != nil {
		t.Fatal(err)
	}
	if msgs := info.CachedInfo().State.Msgs; msgs != 1 {
		t.Fatalf("INGEST holds %d messages; want 1", msgs)
	}
}
