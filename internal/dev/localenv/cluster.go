package localenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/sluicehq/sluice/internal/platform/broker"
	"github.com/sluicehq/sluice/internal/platform/natsauth"
)

// ClusterSize is the number of nodes in a Cluster: the smallest JetStream
// cluster that keeps an R3 stream available with one node down.
const ClusterSize = 3

// Cluster is a JetStream cluster of local nats-servers on loopback client
// and route ports, each with its own store directory. Nodes can be killed,
// stopped and restarted one at a time on the same ports and store.
type Cluster struct {
	// URL lists every node's client URL with the topology owner's
	// credentials, comma-separated, as clients are given it to fail over.
	// Services take URLFor their role.
	URL string
	// Nodes are the servers, named n1, n2, n3. They share one user per
	// role (internal/platform/natsauth).
	Nodes []*ClusterNode
}

// URLFor lists every node's client URL carrying role's credentials.
func (c *Cluster) URLFor(role natsauth.Role) string {
	urls := make([]string, len(c.Nodes))
	for i, n := range c.Nodes {
		urls[i] = n.URLFor(role)
	}
	return strings.Join(urls, ",")
}

// ConnConfig is how a client connects to the cluster as role.
func (c *Cluster) ConnConfig(role natsauth.Role, name string) broker.ConnConfig {
	return broker.ConnConfig{URL: c.URLFor(role), Name: name}
}

// Env is the environment a Sluice process connects to the cluster as role
// with.
func (c *Cluster) Env(role natsauth.Role) []string {
	return []string{"NATS_URL=" + c.URLFor(role)}
}

// ClusterNode is one server of a Cluster.
type ClusterNode struct {
	*NATS
	// Name is the node's server_name, as StreamInfo's Cluster.Leader
	// reports it.
	Name string
	// StoreDir is the node's JetStream store directory.
	StoreDir string
}

// clusterReady bounds the wait for a started node's JetStream to answer.
const clusterReady = 60 * time.Second

// ClusterOption adjusts a cluster's nodes.
type ClusterOption func(*clusterOptions)

type clusterOptions struct {
	syncAlways bool
}

// SyncAlways sets JetStream's sync_interval to always: every write is
// flushed to disk before it is acknowledged. The default flushes every
// two minutes.
func SyncAlways() ClusterOption { return func(o *clusterOptions) { o.syncAlways = true } }

// StartLocalCluster starts a ClusterSize-node JetStream cluster from the
// nats-server binary at bin, storing under dir.
func StartLocalCluster(ctx context.Context, bin, dir string, opts ...ClusterOption) (*Cluster, error) {
	var o clusterOptions
	for _, opt := range opts {
		opt(&o)
	}
	clientPorts, routePorts := make([]int, ClusterSize), make([]int, ClusterSize)
	routes := make([]string, ClusterSize)
	for i := range ClusterSize {
		var err error
		if clientPorts[i], err = freePort(); err != nil {
			return nil, err
		}
		if routePorts[i], err = freePort(); err != nil {
			return nil, err
		}
		routes[i] = fmt.Sprintf("nats-route://127.0.0.1:%d", routePorts[i])
	}
	c := &Cluster{}
	auth := newAuthNATS("")
	for i := range ClusterSize {
		node, err := newClusterNode(dir, fmt.Sprintf("n%d", i+1), bin, clientPorts[i], routePorts[i], routes, auth, o)
		if err != nil {
			return nil, err
		}
		c.Nodes = append(c.Nodes, node)
	}
	c.URL = c.URLFor(natsauth.Owner)
	// Every node starts before any is waited for: JetStream answers only
	// once a quorum of the cluster has elected a meta leader.
	procs := make([]*Process, len(c.Nodes))
	for i, n := range c.Nodes {
		var err error
		if procs[i], err = n.srv.start(); err != nil {
			return nil, errors.Join(err, c.Close())
		}
	}
	for i, n := range c.Nodes {
		if err := procs[i].WaitReady(clusterReady, n.jetStreamReady); err != nil {
			return nil, errors.Join(err, c.Close())
		}
	}
	return c, nil
}

// newClusterNode writes one node's configuration: loopback client and
// route ports, its server_name, its store, and routes to every node. The
// nodes do not advertise their client URLs, so clients use only the URLs
// they are given — a test can route them through proxies.
func newClusterNode(root, name, bin string, port, routePort int, routes []string, auth *NATS, o clusterOptions) (*ClusterNode, error) {
	dir := filepath.Join(root, name)
	store := filepath.Join(dir, "jetstream")
	if err := os.MkdirAll(store, 0o755); err != nil {
		return nil, err
	}
	conf := fmt.Sprintf(`server_name: %s
listen: 127.0.0.1:%d
%s
jetstream {
  store_dir: %q%s
}
cluster {
  name: sluice
  listen: 127.0.0.1:%d
  routes: [%s]
  no_advertise: true
}
`, name, port, auth.serverConfig(nil), store, syncSetting(o), routePort, strings.Join(routes, ", "))
	path := filepath.Join(dir, "nats.conf")
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		return nil, err
	}
	node := &NATS{base: fmt.Sprintf("nats://127.0.0.1:%d", port), passwords: auth.passwords}
	node.URL = node.URLFor(natsauth.Owner)
	node.srv = &server{cmd: Command{Name: "nats-server " + name, Path: bin, Args: []string{"-c", path},
		Log: filepath.Join(dir, "nats-server.log"), Group: true}}
	return &ClusterNode{Name: name, StoreDir: store, NATS: node}, nil
}

func syncSetting(o clusterOptions) string {
	if o.syncAlways {
		return "\n  sync_interval: always"
	}
	return ""
}

// Stop shuts the node down gracefully (SIGTERM), as a rolling restart does.
func (n *ClusterNode) Stop() error { return n.srv.signal(syscall.SIGTERM, 30*time.Second) }

// Node returns the node named name, or nil.
func (c *Cluster) Node(name string) *ClusterNode {
	for _, n := range c.Nodes {
		if n.Name == name {
			return n
		}
	}
	return nil
}

// StreamLeader returns the node that leads stream's replicas.
func (c *Cluster) StreamLeader(ctx context.Context, js jetstream.JetStream, stream string) (*ClusterNode, error) {
	s, err := js.Stream(ctx, stream)
	if err != nil {
		return nil, err
	}
	info, err := s.Info(ctx)
	if err != nil {
		return nil, err
	}
	if info.Cluster == nil || info.Cluster.Leader == "" {
		return nil, fmt.Errorf("stream %s has no leader", stream)
	}
	if n := c.Node(info.Cluster.Leader); n != nil {
		return n, nil
	}
	return nil, fmt.Errorf("stream %s is led by %q, not a node of this cluster", stream, info.Cluster.Leader)
}

// WaitCurrent polls until each of streams, and each of their consumers,
// has a leader and every other replica is online and current: the state
// in which the next node of a rolling restart may go down.
func (c *Cluster) WaitCurrent(ctx context.Context, js jetstream.JetStream, timeout time.Duration, streams ...string) error {
	var err error
	if Poll(timeout, func() bool { err = c.current(ctx, js, streams); return err == nil || ctx.Err() != nil }) && err == nil {
		return nil
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return fmt.Errorf("cluster not current after %s: %w", timeout, err)
}

func (c *Cluster) current(ctx context.Context, js jetstream.JetStream, streams []string) error {
	attempt, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	for _, name := range streams {
		s, err := js.Stream(attempt, name)
		if err != nil {
			return err
		}
		info, err := s.Info(attempt)
		if err != nil {
			return err
		}
		if err := replicasCurrent("stream "+name, info.Cluster); err != nil {
			return err
		}
		consumers := s.ListConsumers(attempt)
		for ci := range consumers.Info() {
			if err := replicasCurrent("consumer "+name+"/"+ci.Name, ci.Cluster); err != nil {
				return err
			}
		}
		if err := consumers.Err(); err != nil {
			return err
		}
	}
	return nil
}

func replicasCurrent(what string, ci *jetstream.ClusterInfo) error {
	if ci == nil || ci.Leader == "" {
		return fmt.Errorf("%s has no leader", what)
	}
	for _, r := range ci.Replicas {
		if r.Offline || !r.Current {
			return fmt.Errorf("%s: replica %s not current (offline %t, %d operations behind, last seen %s ago; leader %s)",
				what, r.Name, r.Offline, r.Lag, r.Active.Round(time.Millisecond), ci.Leader)
		}
	}
	return nil
}

// Close kills every node, for cleanup.
func (c *Cluster) Close() error {
	var errs []error
	for _, n := range c.Nodes {
		errs = append(errs, n.srv.close(syscall.SIGKILL, killWait))
	}
	return errors.Join(errs...)
}
