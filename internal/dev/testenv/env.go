package testenv

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"

	"github.com/sluicehq/sluice/internal/dev/localenv"
)

// The servers tests get are localenv's; testenv adds the URLs from the
// environment and the container fallback.
type (
	// Postgres is a running PostgreSQL server; see localenv.Postgres.
	Postgres = localenv.Postgres
	// NATS is a running nats-server with JetStream; see localenv.NATS.
	NATS = localenv.NATS
	// NATSOption adjusts a NATS server a test asks for.
	NATSOption = localenv.NATSOption
	// TLSFiles are the PEM files a client of a TLS server needs.
	TLSFiles = localenv.TLSFiles
)

// WithTLS makes the server require TLS with client certificates, from a
// CA generated for it; NATS.TLS holds the client's files. Only local
// servers offer it.
func WithTLS() NATSOption { return localenv.WithTLS() }

// NATSServerBinary returns the path of a nats-server built from the
// module version pinned in go.mod; see localenv.NATSServerBinary.
func NATSServerBinary(ctx context.Context) (string, error) { return localenv.NATSServerBinary(ctx) }

// postgresServer provides a PostgreSQL server: DATABASE_URL when set (its
// database part is ignored; the server must let this user create
// databases), else a local cluster, else a container.
func postgresServer(ctx context.Context, e *localenv.Env) (*Postgres, error) {
	if raw := os.Getenv("DATABASE_URL"); raw != "" {
		return externalPostgres("DATABASE_URL", raw)
	}
	return localPostgres(ctx, e)
}

// externalPostgres is the server at raw, the value of the environment
// variable name, addressed at its "postgres" database.
func externalPostgres(name, raw string) (*Postgres, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	u.Path = "/postgres"
	return localenv.AttachPostgres(u.String(), nil), nil
}

// localPostgres starts a server that this process controls — one that
// StopImmediate and Restart work on — ignoring DATABASE_URL; without
// PostgreSQL binaries, a container.
func localPostgres(ctx context.Context, e *localenv.Env) (*Postgres, error) {
	pg, localErr := e.LocalPostgres(ctx)
	return orContainer(ctx, e, pg, localErr, "PostgreSQL", "local binaries",
		"DATABASE_URL; PostgreSQL ≥ 15 server binaries (initdb, postgres) on PATH")
}

// orContainer is pg when starting it locally succeeded (localErr nil),
// else a container PostgreSQL; when neither starts, the error names what
// was wanted, why each way failed, and how to provide one.
func orContainer(ctx context.Context, e *localenv.Env, pg *Postgres, localErr error, what, localWay, provide string) (*Postgres, error) {
	if localErr == nil {
		return pg, nil
	}
	pg, dockerErr := startContainerPostgres(ctx, postgresImage())
	if dockerErr == nil {
		e.OnClose(pg.Close)
		return pg, nil
	}
	return nil, fmt.Errorf("no %s for tests:\n  %s: %v\n  docker: %v\nprovide one of: %s; a Docker engine",
		what, localWay, localErr, dockerErr, provide)
}

// localNATS starts a server that this process controls — one that Kill
// and Restart work on — ignoring NATS_URL; without a nats-server binary,
// a container (but not WithTLS).
func localNATS(ctx context.Context, e *localenv.Env, opts ...NATSOption) (*NATS, error) {
	n, binErr := e.LocalNATS(ctx, opts...)
	if binErr == nil || !errors.Is(binErr, localenv.ErrNoNATSServer) {
		return n, binErr
	}
	if localenv.TLSRequested(opts...) {
		return nil, fmt.Errorf("no nats-server binary for a TLS test server: %w", binErr)
	}
	dir, err := e.Subdir("nats-")
	if err != nil {
		return nil, err
	}
	n, dockerErr := startContainerNATS(ctx, dir)
	if dockerErr == nil {
		e.OnClose(n.Close)
		return n, nil
	}
	return nil, fmt.Errorf("no nats-server for tests:\n  local build: %v\n  docker: %v\n"+
		"provide one of: NATS_URL; NATS_SERVER_BIN; Go and the module proxy to build %s; a Docker engine",
		binErr, dockerErr, localenv.NATSServerModule)
}
