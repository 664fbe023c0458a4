package broker_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/sluicehq/sluice/internal/dev/testenv"
	"github.com/sluicehq/sluice/internal/platform/broker"
)

// Ensure declares an R3 topology while two nodes of three are down and on
// their way back, as `sluice nats setup` may run during a restart of the
// cluster: without a quorum the cluster answers no declaration (or says
// it is unavailable), and Ensure asks again, in short attempts, until the
// nodes are back, instead of failing or waiting out its caller's deadline
// on a request nobody will answer.
func TestEnsureWaitsForTheClusterToComeBack(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := testenv.NewCluster(t)
	nc, js, err := broker.Connect(broker.ConnConfig{URL: c.URL, Name: t.Name()}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	down := c.Nodes[1:]
	for _, n := range down {
		if err := n.Stop(); err != nil {
			t.Fatal(err)
		}
	}

	// The premise: without a quorum a declaration gets no answer, or a
	// refusal.
	attempt, cancelAttempt := context.WithTimeout(ctx, 5*time.Second)
	_, err = js.CreateStream(attempt, jetstream.StreamConfig{Name: "PROBE", Subjects: []string{"probe"}, Replicas: testenv.ClusterSize})
	cancelAttempt()
	if err == nil {
		t.Fatal("an R3 stream was declared without a quorum: the test proves nothing")
	}
	t.Logf("without a quorum: %v", err)

	restarted := make(chan error, 1)
	go func() {
		time.Sleep(2 * time.Second)
		var errs []error
		for _, n := range down {
			errs = append(errs, n.Start(ctx))
		}
		restarted <- errors.Join(errs...)
	}()
	start := time.Now()
	if err := broker.Ensure(ctx, js, broker.Topology{Replicas: testenv.ClusterSize}); err != nil {
		t.Fatalf("Ensure while the cluster comes back: %v", err)
	}
	t.Logf("declared %s after the nodes were started", time.Since(start))
	if err := <-restarted; err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{broker.IngestStream, broker.DLQStream} {
		s, err := js.Stream(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		if r := s.CachedInfo().Config.Replicas; r != testenv.ClusterSize {
			t.Errorf("%s at R%d, want R%d", name, r, testenv.ClusterSize)
		}
	}
}
