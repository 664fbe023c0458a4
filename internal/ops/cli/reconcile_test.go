package cli_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/sluicehq/sluice/internal/dev/testenv"
	"github.com/sluicehq/sluice/internal/platform/broker"
	"github.com/sluicehq/sluice/internal/platform/natsauth"
)

// A reconcile that finds nothing listening where NATS_URL points exits
// 2, "could not check", not 1, which means leaks were found: a scheduled
// check must not page anyone about leaks nobody has seen. It says so at
// once, naming NATS_URL and the refused connection, rather than waiting
// out --settle-timeout for a server that is not there; a cluster that
// answers but has not settled is waited for (TestReconcileOnASettlingCluster).
func TestReconcileExitsTwoAtOnceWhenNothingListens(t *testing.T) {
	t.Parallel()
	db := testenv.NewDatabase(t)
	n := testenv.NewNATS(t)
	if code, _, errOut := sluice(t, map[string]string{"NATS_URL": n.URL}, "nats", "setup"); code != 0 {
		t.Fatalf("nats setup exited %d: %s", code, errOut)
	}
	env := map[string]string{"DATABASE_URL": db.URL, "NATS_URL": n.URLFor(natsauth.Operator)}
	if code, out, errOut := sluice(t, env, "reconcile"); code != 0 {
		t.Fatalf("reconcile of an empty system exited %d, want 0:\n%s%s", code, out, errOut)
	}
	if err := n.Kill(context.Background()); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	code, out, errOut := sluice(t, env, "reconcile", "--settle-timeout", "30s")
	elapsed := time.Since(start)
	if code != 2 {
		t.Fatalf("reconcile with NATS down exited %d, want 2 (could not check):\n%s%s", code, out, errOut)
	}
	for _, want := range []string{"could not check", "NATS_URL ", "connection refused", "start NATS"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr %q does not say %q", errOut, want)
		}
	}
	if elapsed > 5*time.Second {
		t.Errorf("gave up after %s, want at once", elapsed)
	}
}

// The help of `sluice reconcile` names its three exit statuses.
func TestReconcileHelpNamesExitStatuses(t *testing.T) {
	t.Parallel()
	_, _, errOut := sluice(t, nil, "reconcile", "--help")
	for _, want := range []string{"--settle-timeout", "Exit status:", "\n  0  ", "\n  1  problems found", "\n  2  could not check"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("reconcile --help lacks %q:\n%s", want, errOut)
		}
	}
}

// On a 3-node cluster, reconcile run right after a node was killed and
// started again waits for the cluster to elect its leaders and checks
// (exit 0); with two nodes of three killed the cluster has no quorum,
// nobody leads INGEST, and reconcile says it could not check (exit 2)
// once --settle-timeout has passed, rather than reporting problems.
func TestReconcileOnASettlingCluster(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	db := testenv.NewDatabase(t)
	cluster := testenv.NewCluster(t)
	js := testenv.ClusterJetStream(t, cluster)
	env := map[string]string{"DATABASE_URL": db.URL, "NATS_URL": cluster.URLFor(natsauth.Operator)}

	// The node leading the durable reconcile inspects goes down without
	// a goodbye and is started again while reconcile runs: the durable
	// has no leader until the others elect one.
	leader := workersLeader(ctx, t, cluster, js)
	if err := leader.Kill(ctx); err != nil {
		t.Fatal(err)
	}
	restarted := make(chan error, 1)
	go func() { restarted <- leader.Start(ctx) }()
	code, out, errOut := sluice(t, env, "reconcile")
	if err := <-restarted; err != nil {
		t.Fatal(err)
	}
	if code != 0 {
		t.Fatalf("reconcile as %s was killed and restarted exited %d, want 0:\n%s%s", leader.Name, code, out, errOut)
	}

	if err := cluster.WaitCurrent(ctx, js, 2*time.Minute, broker.IngestStream, broker.DLQStream); err != nil {
		t.Fatal(err)
	}
	// Killing the leaders of INGEST and of its workers durable, and a
	// second node if one leads both, leaves a node that leads neither and
	// cannot be elected alone.
	down := map[*testenv.ClusterNode]bool{workersLeader(ctx, t, cluster, js): true}
	ingest, err := cluster.StreamLeader(ctx, js, broker.IngestStream)
	if err != nil {
		t.Fatal(err)
	}
	down[ingest] = true
	for _, n := range cluster.Nodes {
		if len(down) < 2 {
			down[n] = true
		}
	}
	for n := range down {
		if err := n.Kill(ctx); err != nil {
			t.Fatal(err)
		}
	}
	code, out, errOut = sluice(t, env, "reconcile", "--settle-timeout", "3s")
	if code != 2 {
		t.Fatalf("reconcile without a quorum exited %d, want 2 (could not check):\n%s%s", code, out, errOut)
	}
	if !strings.Contains(errOut, "could not check") {
		t.Errorf("stderr %q does not say the check could not be made", errOut)
	}
}

// workersLeader returns the node that leads the workers durable.
func workersLeader(ctx context.Context, t *testing.T, cluster *testenv.Cluster, js jetstream.JetStream) *testenv.ClusterNode {
	t.Helper()
	cons, err := js.Consumer(ctx, broker.IngestStream, broker.WorkersConsumer)
	if err != nil {
		t.Fatal(err)
	}
	info, err := cons.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.Cluster == nil || cluster.Node(info.Cluster.Leader) == nil {
		t.Fatalf("workers durable has no leader among the cluster's nodes: %+v", info.Cluster)
	}
	return cluster.Node(info.Cluster.Leader)
}
