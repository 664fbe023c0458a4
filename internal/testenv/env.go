package testenv

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"sync"
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

func (e *Env) onClose(fn func() error) {
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

// subdir makes a fresh directory for one server below the root.
func (e *Env) subdir(prefix string) (string, error) {
	dir, err := os.MkdirTemp(e.root, prefix)
	if err != nil {
		return "", err
	}
	return dir, os.Chmod(dir, 0o755)
}

// Postgres provides a PostgreSQL server: DATABASE_URL when set (its
// database part is ignored; the server must let this user create
// databases), else a local cluster, else a container.
func (e *Env) Postgres(ctx context.Context) (*Postgres, error) {
	if raw := os.Getenv("DATABASE_URL"); raw != "" {
		return externalPostgres("DATABASE_URL", raw)
	}
	return e.LocalPostgres(ctx)
}

// externalPostgres is the server at raw, the value of the environment
// variable name, addressed at its "postgres" database.
func externalPostgres(name, raw string) (*Postgres, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	u.Path = "/postgres"
	return &Postgres{URL: u.String()}, nil
}

// LocalPostgres starts a server that this process controls — one that
// StopImmediate and Restart work on — ignoring DATABASE_URL.
func (e *Env) LocalPostgres(ctx context.Context) (*Postgres, error) {
	dir, err := e.subdir("pg-")
	if err != nil {
		return nil, err
	}
	pg, localErr := StartLocalPostgres(ctx, dir)
	if localErr == nil {
		e.onClose(pg.stop)
		return pg, nil
	}
	pg, dockerErr := startContainerPostgres(ctx, postgresImage())
	if dockerErr == nil {
		e.onClose(pg.stop)
		return pg, nil
	}
	return nil, fmt.Errorf("no PostgreSQL for tests:\n  local binaries: %v\n  docker: %v\n"+
		"provide one of: DATABASE_URL; PostgreSQL ≥ 15 server binaries (initdb, postgres) on PATH; a Docker engine",
		localErr, dockerErr)
}

// NATS provides a nats-server with JetStream: NATS_URL when set, else a
// local server, else a container.
func (e *Env) NATS(ctx context.Context) (*NATS, error) {
	if u := os.Getenv("NATS_URL"); u != "" {
		return externalNATS(u), nil
	}
	return e.LocalNATS(ctx)
}

// LocalNATS starts a server that this process controls — one that Kill and
// Restart work on — ignoring NATS_URL. It requires a user per role, and
// TLS too WithTLS (local binaries only).
func (e *Env) LocalNATS(ctx context.Context, opts ...NATSOption) (*NATS, error) {
	dir, err := e.subdir("nats-")
	if err != nil {
		return nil, err
	}
	bin, binErr := NATSServerBinary(ctx)
	if binErr == nil {
		n, err := StartLocalNATS(ctx, bin, dir, opts...)
		if err != nil {
			return nil, err
		}
		e.onClose(n.stop)
		return n, nil
	}
	var o natsOptions
	for _, opt := range opts {
		opt(&o)
	}
	if o.tls {
		return nil, fmt.Errorf("no nats-server binary for a TLS test server: %w", binErr)
	}
	n, dockerErr := startContainerNATS(ctx, dir)
	if dockerErr == nil {
		e.onClose(n.stop)
		return n, nil
	}
	return nil, fmt.Errorf("no nats-server for tests:\n  local build: %v\n  docker: %v\n"+
		"provide one of: NATS_URL; NATS_SERVER_BIN; Go and the module proxy to build %s; a Docker engine",
		binErr, dockerErr, natsServerModule)
}
