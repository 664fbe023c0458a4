package broker_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/sluicehq/sluice/internal/dev/testenv"
	"github.com/sluicehq/sluice/internal/platform/broker"
	"github.com/sluicehq/sluice/internal/platform/natsauth"
)

func TestMain(m *testing.M) { testenv.Main(m) }

func setup(t *testing.T) jetstream.JetStream {
	t.Helper()
	srv := testenv.NewNATS(t)
	nc, js, err := broker.Connect(srv.ConnConfig(natsauth.Owner, t.Name()), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return js
}

func TestEnsureDeclaresDesignTopology(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	js := setup(t)
	topo := broker.Topology{MaxDeliveries: 4}
	if err := broker.Ensure(ctx, js, topo); err != nil {
		t.Fatal(err)
	}
	// Declaring twice is a no-op, not an error.
	if err := broker.Ensure(ctx, js, topo); err != nil {
		t.Fatalf("second Ensure: %v", err)
	}

	ingest, err := js.Stream(ctx, broker.IngestStream)
	if err != nil {
		t.Fatal(err)
	}
	ic := ingest.CachedInfo().Config
	if ic.Retention != jetstream.WorkQueuePolicy || ic.Discard != jetstream.DiscardNew || ic.Storage != jetstream.FileStorage {
		t.Errorf("INGEST retention=%v discard=%v storage=%v; want WorkQueue, DiscardNew, File", ic.Retention, ic.Discard, ic.Storage)
	}
	if ic.MaxMsgs <= 0 || ic.MaxBytes <= 0 {
		t.Errorf("INGEST must be bounded: MaxMsgs=%d MaxBytes=%d", ic.MaxMsgs, ic.MaxBytes)
	}
	if ic.Duplicates < 2*time.Minute {
		t.Errorf("INGEST duplicate window %s < 2m", ic.Duplicates)
	}

	dlq, err := js.Stream(ctx, broker.DLQStream)
	if err != nil {
		t.Fatal(err)
	}
	dc := dlq.CachedInfo().Config
	if dc.Retention != jetstream.LimitsPolicy || dc.MaxAge != 90*24*time.Hour || dc.Storage != jetstream.FileStorage {
		t.Errorf("DLQ retention=%v maxAge=%s storage=%v; want Limits, 90d, File", dc.Retention, dc.MaxAge, dc.Storage)
	}

	for _, c := range []struct {
		stream, name, filter string
		maxDeliver           int
	}{
		{broker.IngestStream, broker.WorkersConsumer, "ingest.chunks.>", -1},
		{broker.IngestStream, broker.ReplayConsumer, "ingest.replay.>", -1},
		{broker.DLQStream, broker.TriageConsumer, "dlq.>", -1},
		{broker.DLQStream, broker.ReplayerConsumer, "dlq.retry.>", -1},
		{broker.DLQStream, broker.AlerterConsumer, "dlq.>", -1},
	} {
		cons, err := js.Consumer(ctx, c.stream, c.name)
		if err != nil {
			t.Errorf("consumer %s/%s: %v", c.stream, c.name, err)
			continue
		}
		cfg := cons.CachedInfo().Config
		if cfg.FilterSubject != c.filter || cfg.MaxDeliver != c.maxDeliver || cfg.AckPolicy != jetstream.AckExplicitPolicy {
			t.Errorf("%s: filter=%q maxDeliver=%d ack=%v; want %q, %d, explicit", c.name, cfg.FilterSubject, cfg.MaxDeliver, cfg.AckPolicy, c.filter, c.maxDeliver)
		}
	}
}

func TestEnsureKeepsOperatorPause(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	js := setup(t)
	if err := broker.Ensure(ctx, js, broker.Topology{}); err != nil {
		t.Fatal(err)
	}
	until := time.Now().Add(time.Hour)
	if _, err := js.PauseConsumer(ctx, broker.IngestStream, broker.ReplayConsumer, until); err != nil {
		t.Fatal(err)
	}
	if err := broker.Ensure(ctx, js, broker.Topology{}); err != nil {
		t.Fatal(err)
	}
	cons, err := js.Consumer(ctx, broker.IngestStream, broker.ReplayConsumer)
	if err != nil {
		t.Fatal(err)
	}
	if !cons.CachedInfo().Paused {
		t.Fatal("a service restart resumed the operator-paused replay durable")
	}
}

func TestFullIngestStreamRefusesInsteadOfDropping(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	js := setup(t)
	if err := broker.Ensure(ctx, js, broker.Topology{IngestMaxMsgs: 2}); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if _, err := js.Publish(ctx, "ingest.chunks.s", []byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := js.Publish(ctx, "ingest.chunks.s", []byte("third")); err == nil {
		t.Fatal("a full INGEST accepted a publish; DiscardNew must refuse it")
	}
	s, _ := js.Stream(ctx, broker.IngestStream)
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != 2 {
		t.Fatalf("stream holds %d messages, want the first 2 kept", info.State.Msgs)
	}
}

// A source at its bound has its publishes refused while every other
// source, and its own replays, still get in: one source's backlog can
// never queue more than IngestMaxPerSource in front of another's.
func TestSourceAtItsBoundLeavesRoomForOthers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	js := setup(t)
	if err := broker.Ensure(ctx, js, broker.Topology{IngestMaxPerSource: 2}); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if _, err := js.Publish(ctx, "ingest.chunks.big", []byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := js.Publish(ctx, "ingest.chunks.big", []byte("third")); err == nil {
		t.Fatal("a source at its bound had a third job accepted")
	}
	for _, subject := range []string{"ingest.chunks.small", "ingest.replay.big"} {
		if _, err := js.Publish(ctx, subject, []byte("x")); err != nil {
			t.Fatalf("publish to %s beside a full source: %v", subject, err)
		}
	}
	s, _ := js.Stream(ctx, broker.IngestStream)
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != 4 {
		t.Fatalf("stream holds %d messages, want 4: the full source's first 2 kept", info.State.Msgs)
	}
	if err := (broker.Topology{IngestMaxPerSource: -2}).Validate(); err == nil {
		t.Fatal("Validate accepted a per-source bound of -2")
	}
}

// Services only verify the topology: a missing stream is
// ErrTopologyMissing, which names the command that declares it.
func TestVerifyReportsMissingTopology(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	js := setup(t)
	if err := broker.Verify(ctx, js); !errors.Is(err, broker.ErrTopologyMissing) {
		t.Fatalf("Verify before setup = %v, want ErrTopologyMissing", err)
	}
	if err := broker.Ensure(ctx, js, broker.Topology{}); err != nil {
		t.Fatal(err)
	}
	if err := broker.Verify(ctx, js); err != nil {
		t.Fatalf("Verify after setup: %v", err)
	}
	if err := js.DeleteStream(ctx, broker.DLQStream); err != nil {
		t.Fatal(err)
	}
	err := broker.Verify(ctx, js)
	if !errors.Is(err, broker.ErrTopologyMissing) || !strings.Contains(err.Error(), "sluice nats setup") {
		t.Fatalf("Verify without DLQ = %v, want ErrTopologyMissing naming sluice nats setup", err)
	}
}

// A deployment whose INGEST durables still carry a server-side MaxDeliver
// (which strands messages in a work queue) is moved to unlimited
// deliveries by the topology owner, and both streams cap message size at
// the server's max_payload.
func TestEnsureLiftsServerSideDeliveryCapAndBoundsMessages(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	js := setup(t)
	topo := broker.Topology{}
	if err := broker.Ensure(ctx, js, topo); err != nil {
		t.Fatal(err)
	}
	old, err := topo.ConsumerConfig(broker.WorkersConsumer)
	if err != nil {
		t.Fatal(err)
	}
	old.MaxDeliver = 7
	if _, err := js.UpdateConsumer(ctx, broker.IngestStream, old); err != nil {
		t.Fatal(err)
	}
	if err := broker.Ensure(ctx, js, topo); err != nil {
		t.Fatal(err)
	}
	cons, err := js.Consumer(ctx, broker.IngestStream, broker.WorkersConsumer)
	if err != nil {
		t.Fatal(err)
	}
	if got := cons.CachedInfo().Config.MaxDeliver; got != -1 {
		t.Errorf("MaxDeliver after Ensure = %d, want -1 (unlimited)", got)
	}
	if got := js.Conn().MaxPayload(); got != broker.MaxPayload {
		t.Errorf("server max_payload = %d, want %d, the streams' MaxMsgSize", got, broker.MaxPayload)
	}
	for _, name := range []string{broker.IngestStream, broker.DLQStream} {
		s, err := js.Stream(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		if got := s.CachedInfo().Config.MaxMsgSize; got != broker.MaxPayload {
			t.Errorf("%s MaxMsgSize = %d, want %d", name, got, broker.MaxPayload)
		}
	}
}
