package localenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
)

// Env owns the servers it started and one temporary root directory that
// holds their data and logs.
type Env struct {
	root string

	mu      sync.Mutex
	closers []func() error
}

// New creates an environment with a fresh temporary root. The root is
// removed by Close, or by a watchdog if the process dies first.
func New() (*Env, error) {
	root, err := os.MkdirTemp("", "sluice-env-")
	if err != nil {
		return nil, fmt.Errorf("create temp root: %w", err)
	}
	// PostgreSQL runs as another user when we are root; it must be able to
	// reach its data directory below this root.
	if err := os.Chmod(root, 0o755); err != nil {
		return nil, err
	}
	if err := startWatchdog(root); err != nil {
		os.RemoveAll(root)
		return nil, err
	}
	return &Env{root: root}, nil
}

// Root is the temporary directory that holds the servers' data and logs.
func (e *Env) Root() string { return e.root }

// OnClose registers fn to run when the environment closes, before the
// functions registered earlier.
func (e *Env) OnClose(fn func() error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.closers = append(e.closers, fn)
}

// Close stops every server the environment started, in reverse order, and
// removes the temporary root.
func (e *Env) Close() error {
	e.mu.Lock()
	closers := e.closers
	e.closers = nil
	e.mu.Unlock()
	var errs []error
	for i := len(closers) - 1; i >= 0; i-- {
		errs = append(errs, closers[i]())
	}
	errs = append(errs, os.RemoveAll(e.root))
	return errors.Join(errs...)
}

// Subdir makes a fresh directory below the root, named with prefix, that
// a server running as another user may read.
func (e *Env) Subdir(prefix string) (string, error) {
	dir, err := os.MkdirTemp(e.root, prefix)
	if err != nil {
		return "", err
	}
	return dir, os.Chmod(dir, 0o755)
}

// LocalPostgres starts a PostgreSQL server from the machine's binaries,
// adjusted by opts, stopped when the environment closes.
func (e *Env) LocalPostgres(ctx context.Context, opts ...PostgresOption) (*Postgres, error) {
	return startIn(e, "pg-", func(dir string) (*Postgres, error) { return StartLocalPostgres(ctx, dir, opts...) })
}

// LocalPgvector starts PostgreSQL 17 with pgvector in the pgvector root
// (see PgvectorRoot) with chroot, stopped when the environment closes.
func (e *Env) LocalPgvector(ctx context.Context) (*Postgres, error) {
	root, err := PgvectorRoot()
	if err != nil {
		return nil, err
	}
	pg, cleanup, err := StartChrootPostgres(ctx, root)
	if err != nil {
		return nil, err
	}
	e.OnClose(cleanup)
	e.OnClose(pg.Close)
	return pg, nil
}

// LocalNATS starts a nats-server (see NATSServerBinary) with JetStream
// and a user per role, stopped when the environment closes. An error
// wrapping ErrNoNATSServer means no binary could be found or built.
func (e *Env) LocalNATS(ctx context.Context, opts ...NATSOption) (*NATS, error) {
	bin, err := NATSServerBinary(ctx)
	if err != nil {
		return nil, err
	}
	return startIn(e, "nats-", func(dir string) (*NATS, error) { return StartLocalNATS(ctx, bin, dir, opts...) })
}

// LocalCluster starts a ClusterSize-node JetStream cluster, stopped when
// the environment closes.
func (e *Env) LocalCluster(ctx context.Context, opts ...ClusterOption) (*Cluster, error) {
	bin, err := NATSServerBinary(ctx)
	if err != nil {
		return nil, fmt.Errorf("no nats-server for a cluster: %w", err)
	}
	return startIn(e, "nats-cluster-", func(dir string) (*Cluster, error) { return StartLocalCluster(ctx, bin, dir, opts...) })
}

// startIn starts a server with start in a fresh directory named with
// prefix, and closes it when e closes.
func startIn[S interface{ Close() error }](e *Env, prefix string, start func(dir string) (S, error)) (S, error) {
	var zero S
	dir, err := e.Subdir(prefix)
	if err != nil {
		return zero, err
	}
	s, err := start(dir)
	if err != nil {
		return zero, err
	}
	e.OnClose(s.Close)
	return s, nil
}

// startWatchdog starts a detached shell that removes dir once the current
// process has exited, however it exited. It is what keeps a panicking
// process from leaving temporary directories behind.
func startWatchdog(dir string) error {
	script := `while kill -0 "$1" 2>/dev/null; do sleep 0.5; done; rm -rf "$2"`
	cmd := exec.Command("/bin/sh", "-c", script, "sluice-env-watchdog", strconv.Itoa(os.Getpid()), dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start cleanup watchdog: %w", err)
	}
	return cmd.Process.Release()
}
