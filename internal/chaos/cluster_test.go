package chaos_test

import (
	"context"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/sluicehq/sluice/internal/broker"
	"github.com/sluicehq/sluice/internal/testenv"
)

// onCluster moves the fleet's services onto cluster, with every stream
// declared R3 and every client given all three URLs; the test's own
// checks use a connection to the cluster too.
func (f *fleet) onCluster(cluster *testenv.Cluster) {
	f.t.Helper()
	nc, js, err := broker.Connect(broker.ConnConfig{URL: cluster.URL, Name: f.t.Name()}, zerolog.Nop())
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(nc.Close)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := broker.Ensure(ctx, js, broker.Topology{Replicas: 3}); err != nil {
		f.t.Fatal(err)
	}
	f.js = js
	f.opts.env = append(f.opts.env, "NATS_URL="+cluster.URL, "STREAM_REPLICAS=3")
}

// With R3 streams, kill -9 of the INGEST stream leader during live
// ingest, then a rolling restart of all three nodes (each stopped,
// restarted, and caught up before the next), converges with no operator
// action: 0 lost, 0 duplicated, INGEST empty, reconcile exit 0.
func TestClusterLeaderKillAndRollingRestart(t *testing.T) {
	t.Parallel()
	cluster := testenv.NewCluster(t)
	f := newFleet(t, fleetOptions{sim: []string{"--latency", "fixed:100ms"},
		env: []string{"BATCH_SIZE=8", "EMBED_MAX_INPUTS=8", "CONSUMER_WORKERS=1", "NATS_PING_INTERVAL=1s", "ACK_WAIT=10s", "OWED_GRACE=3s"}})
	f.onCluster(cluster)
	f.services()
	const docs = 40
	dir := f.writeCorpus("cl", docs, 60)
	producer := f.produce("cluster", dir)
	f.waitInFlight()
	ctx := context.Background()
	leader, err := cluster.StreamLeader(ctx, f.js, broker.IngestStream)
	if err != nil {
		t.Fatal(err)
	}
	if err := leader.Kill(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("killed the INGEST leader %s", leader.Name)
	f.eventually(time.Minute, "a new INGEST leader", func() bool {
		next, err := cluster.StreamLeader(ctx, f.js, broker.IngestStream)
		return err == nil && next != leader
	})
	if err := leader.Start(ctx); err != nil {
		t.Fatal(err)
	}
	// A second run is in flight while the nodes restart one by one.
	dir2 := f.writeCorpus("cm", docs, 60)
	producer2 := f.produce("cluster2", dir2)
	f.rollingRestart(cluster)
	for _, run := range []struct {
		p        *proc
		src, dir string
	}{{producer, "cluster", dir}, {producer2, "cluster2", dir2}} {
		if code, err := run.p.wait(3 * time.Minute); err != nil || code != 0 {
			t.Logf("producer exited %d (%v) during the faults; running it again", code, err)
			f.runProducer(run.src, run.dir)
		}
	}
	v := f.converge(3*time.Minute, 2*docs)
	t.Logf("cluster: %d chunks (%d stored, %d parked)", v.stored+v.parked, v.stored, v.parked)
	if replicas := f.ingestReplicas(); replicas != 3 {
		t.Errorf("INGEST has %d replicas after the faults, want 3", replicas)
	}
}

// ingestReplicas is INGEST's configured replica count.
func (f *fleet) ingestReplicas() int {
	f.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := f.js.Stream(ctx, broker.IngestStream)
	if err != nil {
		f.t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		f.t.Fatal(err)
	}
	return info.Config.Replicas
}

// rollingRestart stops and restarts each node in turn, waiting until
// every stream and consumer is current again before the next.
func (f *fleet) rollingRestart(cluster *testenv.Cluster) {
	f.t.Helper()
	ctx := context.Background()
	for _, n := range cluster.Nodes {
		if err := cluster.WaitCurrent(ctx, f.js, 2*time.Minute, broker.IngestStream, broker.DLQStream); err != nil {
			f.t.Fatal(err)
		}
		if err := n.Stop(); err != nil {
			f.t.Fatal(err)
		}
		if err := n.Start(ctx); err != nil {
			f.t.Fatal(err)
		}
		pending, _ := f.tryCount(`SELECT count(*) FROM ingest_manifest WHERE status = 'pending'`)
		f.t.Logf("restarted %s; %d chunks pending", n.Name, pending)
	}
	if err := cluster.WaitCurrent(ctx, f.js, 2*time.Minute, broker.IngestStream, broker.DLQStream); err != nil {
		f.t.Fatal(err)
	}
}
