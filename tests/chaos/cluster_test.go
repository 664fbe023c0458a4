//go:build chaos

package chaos_test

import (
	"context"
	"flag"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/dev/netfault"
	"github.com/sluicehq/sluice/internal/dev/testenv"
	"github.com/sluicehq/sluice/internal/platform/broker"
	"github.com/sluicehq/sluice/internal/platform/natsauth"
)

// newClusterFleet starts a 3-node cluster and a fleet on it, paced so
// that a few hundred chunks stay in flight for seconds.
func newClusterFleet(t *testing.T) (*testenv.Cluster, *fleet) {
	t.Helper()
	cluster := testenv.NewCluster(t)
	f := newFleet(t, fleetOptions{sim: []string{"--latency", "fixed:100ms"},
		env: []string{"BATCH_SIZE=8", "EMBED_MAX_INPUTS=8", "CONSUMER_WORKERS=1", "NATS_PING_INTERVAL=1s", "ACK_WAIT=10s", "OWED_GRACE=3s"}})
	f.onCluster(cluster)
	return cluster, f
}

// onCluster moves the fleet's services onto cluster, with every stream
// declared R3 and every client given all three URLs; the test's own
// checks use a connection to the cluster too.
func (f *fleet) onCluster(cluster *testenv.Cluster) {
	f.t.Helper()
	f.js = testenv.ClusterJetStream(f.t, cluster)
	f.natsURLFor = cluster.URLFor
}

// leaderGap is the time between the two leader kills of
// TestClusterLeaderKillAndRollingRestart.
var leaderGap = flag.Duration("chaos.leader-gap", 10*time.Second, "time between the cluster test's two leader kills (make chaos: 1m)")

// With R3 streams, kill -9 of the INGEST stream leader during live
// ingest, again -chaos.leader-gap later during a second live run, then a
// rolling restart of all three nodes during a third (each stopped,
// restarted, and caught up before the next), converges with no operator action: 0 lost, 0
// duplicated, INGEST empty, reconcile exit 0.
func TestClusterLeaderKillAndRollingRestart(t *testing.T) {
	t.Parallel()
	cluster, f := newClusterFleet(t)
	f.services()
	const docs = 40
	producer, dir := f.liveRun("cluster", docs)
	first := time.Now()
	f.killLeader(cluster)
	// The gap between the kills is the fault schedule, not a wait for a
	// condition.
	time.Sleep(time.Until(first.Add(*leaderGap)))
	dir2 := f.writeCorpus("cm", docs, 60)
	producer2 := f.produce("cluster2", dir2)
	f.waitSourceInFlight("cluster2")
	f.killLeader(cluster)
	// A third run is in flight while the nodes restart one by one.
	dir3 := f.writeCorpus("cr", docs, 60)
	producer3 := f.produce("cluster3", dir3)
	f.waitSourceInFlight("cluster3")
	f.rollingRestart(cluster)
	for _, run := range []struct {
		p        *proc
		src, dir string
	}{{producer, "cluster", dir}, {producer2, "cluster2", dir2}, {producer3, "cluster3", dir3}} {
		if code, err := run.p.wait(3 * time.Minute); err != nil || code != 0 {
			t.Logf("producer exited %d (%v) during the faults; running it again", code, err)
			f.runProducer(run.src, run.dir)
		}
	}
	v := f.converge(3*time.Minute, 3*docs)
	t.Logf("cluster: %d chunks (%d stored, %d parked)", v.stored+v.parked, v.stored, v.parked)
	if replicas := ingestInfo(t, f.js).Config.Replicas; replicas != 3 {
		t.Errorf("INGEST has %d replicas after the faults, want 3", replicas)
	}
}

// waitSourceInFlight waits until some of source's chunks are stored, so
// that a fault landing next lands on a run in flight.
func (f *fleet) waitSourceInFlight(source string) {
	f.t.Helper()
	f.eventually(time.Minute, source+" in flight", func() bool {
		stored, _ := f.tryCount(`SELECT count(*) FROM ingest_manifest m JOIN documents d USING (doc_id)
			WHERE d.source_id = $1 AND m.status = 'stored'`, source)
		return stored > 0
	})
}

// killLeader kills the INGEST stream leader with SIGKILL, waits until
// another node leads, and starts the killed node again.
func (f *fleet) killLeader(cluster *testenv.Cluster) {
	f.t.Helper()
	ctx := context.Background()
	leader := f.ingestLeader(cluster)
	if err := leader.Kill(ctx); err != nil {
		f.t.Fatal(err)
	}
	pending, _ := f.tryCount(`SELECT count(*) FROM ingest_manifest WHERE status = 'pending'`)
	f.t.Logf("killed the INGEST leader %s with %d chunks pending", leader.Name, pending)
	f.eventually(time.Minute, "a new INGEST leader", func() bool {
		next, err := cluster.StreamLeader(ctx, f.js, broker.IngestStream)
		return err == nil && next != leader
	})
	if err := leader.Start(ctx); err != nil {
		f.t.Fatal(err)
	}
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

// A Toxiproxy partition of the INGEST leader from every client — the
// node keeps its routes to the other two, so it may stay leader — while
// a run is in flight: clients on the silent node notice through their
// pings and move to the other nodes, chunks keep being stored during the
// partition, and once it heals everything converges.
func TestClusterPartitionOfLeaderFromClients(t *testing.T) {
	t.Parallel()
	cluster, f := newClusterFleet(t)
	srv := netfault.New(t)
	proxies := map[string]*netfault.Proxy{}
	var addrs []string
	for _, n := range cluster.Nodes {
		u, err := url.Parse(n.URL)
		if err != nil {
			t.Fatal(err)
		}
		p, err := srv.Proxy(n.Name, u.Host)
		if err != nil {
			t.Fatal(err)
		}
		proxies[n.Name] = p
		addrs = append(addrs, "nats://"+p.Addr)
	}
	f.natsURLFor = func(role natsauth.Role) string {
		urls := make([]string, len(addrs))
		for i, a := range addrs {
			urls[i] = cluster.Nodes[i].URLAt(role, a)
		}
		return strings.Join(urls, ",")
	}
	f.services()
	const docs = 60
	producer, dir := f.liveRun("partition", docs)
	leader := f.ingestLeader(cluster)
	if err := proxies[leader.Name].Inject(netfault.Blackhole()); err != nil {
		t.Fatal(err)
	}
	// Progress is measured after the clients' pings had time to notice.
	time.Sleep(3 * time.Second)
	before := f.count(`SELECT count(*) FROM ingest_manifest WHERE status = 'stored'`)
	time.Sleep(*blackholeFor - 3*time.Second)
	during := f.count(`SELECT count(*) FROM ingest_manifest WHERE status = 'stored'`) - before
	pending := f.count(`SELECT count(*) FROM ingest_manifest WHERE status = 'pending'`)
	if err := proxies[leader.Name].Heal(); err != nil {
		t.Fatal(err)
	}
	t.Logf("partitioned %s from the clients for %s; %d chunks stored meanwhile", leader.Name, *blackholeFor, during)
	if code, err := producer.wait(3 * time.Minute); err != nil || code != 0 {
		t.Logf("producer exited %d (%v) during the partition; running it again", code, err)
		f.runProducer("partition", dir)
	}
	if during == 0 && pending > 0 {
		t.Errorf("no chunk stored during the partition of one node of three, with %d pending", pending)
	}
	v := f.converge(3*time.Minute, docs)
	t.Logf("partition: %d chunks (%d stored, %d parked)", v.stored+v.parked, v.stored, v.parked)
}

// ingestLeader is the node that leads INGEST now.
func (f *fleet) ingestLeader(cluster *testenv.Cluster) *testenv.ClusterNode {
	f.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	leader, err := cluster.StreamLeader(ctx, f.js, broker.IngestStream)
	if err != nil {
		f.t.Fatal(err)
	}
	return leader
}
