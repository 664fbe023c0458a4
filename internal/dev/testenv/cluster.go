package testenv

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/sluicehq/sluice/internal/dev/localenv"
	"github.com/sluicehq/sluice/internal/platform/broker"
)

// The cluster tests get is localenv's.
type (
	// Cluster is a local JetStream cluster; see localenv.Cluster.
	Cluster = localenv.Cluster
	// ClusterNode is one server of a Cluster.
	ClusterNode = localenv.ClusterNode
	// ClusterOption adjusts a cluster's nodes.
	ClusterOption = localenv.ClusterOption
)

// ClusterSize is the number of nodes in a Cluster.
const ClusterSize = localenv.ClusterSize

// SyncAlways sets JetStream's sync_interval to always: every write is
// flushed to disk before it is acknowledged.
func SyncAlways() ClusterOption { return localenv.SyncAlways() }

// NewCluster gives the test a private 3-node JetStream cluster, stopped
// when the test ends.
func NewCluster(t testing.TB, opts ...ClusterOption) *Cluster {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := privateEnv(t).LocalCluster(ctx, opts...)
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	return c
}

// PublishAcked publishes data to subject under message id id, retrying
// until JetStream acknowledges it — as a producer rides out a leader
// election — and fails t when ctx ends first. The stream deduplicates
// the retries by id.
func PublishAcked(ctx context.Context, t testing.TB, js jetstream.JetStream, subject, id string, data []byte) {
	t.Helper()
	for {
		// Each attempt has its own bound: a publish sent while no node led
		// the stream may never be answered.
		attempt, cancel := context.WithTimeout(ctx, broker.PubAckTimeout)
		_, err := js.Publish(attempt, subject, data, jetstream.WithMsgID(id))
		cancel()
		if err == nil {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("publish %s: %v", id, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// ClusterJetStream connects the test to every node of c, declares the
// topology with R3 streams, and closes the connection when the test ends.
func ClusterJetStream(t testing.TB, c *Cluster) jetstream.JetStream {
	t.Helper()
	nc, js, err := broker.Connect(broker.ConnConfig{URL: c.URL, Name: t.Name()}, zerolog.Nop())
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	t.Cleanup(nc.Close)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := broker.Ensure(ctx, js, broker.Topology{Replicas: ClusterSize}); err != nil {
		t.Fatalf("testenv: declare R%d topology: %v", ClusterSize, err)
	}
	return js
}
