package testenv_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/dev/testenv"
	"github.com/sluicehq/sluice/internal/platform/broker"
)

// Messages acknowledged by an R3 stream survive kill -9 of its leader:
// another node takes the lead, publishes go on, and the killed node
// catches up once restarted.
func TestClusterAckedMessagesSurviveLeaderKill(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := testenv.NewCluster(t)
	js := testenv.ClusterJetStream(t, c)
	// A publish during the election fails; it is retried under its
	// message id, which the stream deduplicates, as the producer does.
	publish := func(from, to int) {
		for i := from; i < to; i++ {
			id := fmt.Sprintf("d%d", i)
			testenv.PublishAcked(ctx, t, js, "ingest.chunks.s."+id, id, []byte("x"))
		}
	}
	publish(0, 100)
	leader, err := c.StreamLeader(ctx, js, broker.IngestStream)
	if err != nil {
		t.Fatal(err)
	}
	if err := leader.Kill(ctx); err != nil {
		t.Fatal(err)
	}
	publish(100, 200)
	next, err := c.StreamLeader(ctx, js, broker.IngestStream)
	if err != nil || next == leader {
		t.Fatalf("leader after killing %s: %v, %v", leader.Name, next, err)
	}
	if err := leader.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitCurrent(ctx, js, time.Minute, broker.IngestStream); err != nil {
		t.Fatal(err)
	}
	s, err := js.Stream(ctx, broker.IngestStream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != 200 || info.Config.Replicas != 3 {
		t.Fatalf("INGEST holds %d messages at R%d, want 200 at R3", info.State.Msgs, info.Config.Replicas)
	}
}
