//go:build chaos

package chaos_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/sluicehq/sluice/internal/dev/testenv"
	"github.com/sluicehq/sluice/internal/platform/broker"
)

// One node of an R3 cluster loses power: its store directory is copied
// while it runs, more messages are acknowledged, the node is killed, the
// copy is put back in place of its store — the node comes back with an
// older disk — and it restarts; right after, another node is killed and
// restarted too, so the rolled-back node must serve in the quorum. Every
// acknowledged message must be there, with sync_interval: always and with
// the default (flush every two minutes).
func TestClusterPowerLoss(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		opts []testenv.ClusterOption
	}{
		{"sync_interval=always", []testenv.ClusterOption{testenv.SyncAlways()}},
		{"sync_interval=default", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			lost := powerLoss(t, testenv.NewCluster(t, tc.opts...))
			if lost != 0 {
				t.Errorf("%s: %d acknowledged messages lost", tc.name, lost)
			}
		})
	}
}

// powerLoss runs the scenario on c and returns how many acknowledged
// messages INGEST no longer holds.
func powerLoss(t *testing.T, c *testenv.Cluster) int {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	js := testenv.ClusterJetStream(t, c)
	const batch = 500
	start := time.Now()
	publishAcked(ctx, t, js, 0, batch)
	t.Logf("%d synchronous R3 publishes in %s (%.0f/s)", batch, time.Since(start).Round(time.Millisecond), batch/time.Since(start).Seconds())
	node, err := c.StreamLeader(ctx, js, broker.IngestStream)
	if err != nil {
		t.Fatal(err)
	}
	snapshot := t.TempDir() + "/store"
	if err := os.CopyFS(snapshot, os.DirFS(node.StoreDir)); err != nil {
		t.Fatalf("copy %s's store while it runs: %v", node.Name, err)
	}
	publishAcked(ctx, t, js, batch, 2*batch)
	if err := node.Kill(ctx); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(node.StoreDir); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(snapshot, node.StoreDir); err != nil {
		t.Fatal(err)
	}
	if err := node.Start(ctx); err != nil {
		t.Fatal(err)
	}
	other := c.Nodes[0]
	if other == node {
		other = c.Nodes[1]
	}
	if err := other.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitCurrent(ctx, js, 2*time.Minute, broker.IngestStream); err != nil {
		t.Fatal(err)
	}
	held := int(ingestInfo(t, js).State.Msgs)
	t.Logf("%s lost power with %d of %d acknowledged messages on disk; after it and %s restarted, INGEST holds %d",
		node.Name, batch, 2*batch, other.Name, held)
	return 2*batch - held
}

// publishAcked publishes messages from..to-1 to INGEST, each retried
// until JetStream acknowledges it.
func publishAcked(ctx context.Context, t *testing.T, js jetstream.JetStream, from, to int) {
	t.Helper()
	for i := from; i < to; i++ {
		id := fmt.Sprintf("m%d", i)
		testenv.PublishAcked(ctx, t, js, "ingest.chunks.pl."+id, id, []byte(id))
	}
}

// ingestInfo is INGEST's configuration and state.
func ingestInfo(t *testing.T, js jetstream.JetStream) *jetstream.StreamInfo {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := js.Stream(ctx, broker.IngestStream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return info
}
