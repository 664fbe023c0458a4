package testenv

import (
	"context"
	"testing"
)

// Backend is a kind of PostgreSQL server that tests can ask NewDatabase for.
// The vector store picks its column type from what the server offers, so
// the two backends exercise its two modes.
type Backend string

const (
	// DefaultBackend is the server tests get unless they ask: DATABASE_URL,
	// else the machine's own PostgreSQL binaries, else a container. On the
	// machine's PostgreSQL 15, which lacks pgvector, the embedding column
	// is real[].
	DefaultBackend Backend = "postgres"
	// PgvectorBackend is PostgreSQL 17 with pgvector 0.8:
	// PGVECTOR_DATABASE_URL, else the cached Debian root started with
	// chroot (see localenv.PgvectorRoot), else a container. The embedding column is
	// vector(N).
	PgvectorBackend Backend = "pgvector"
)

// Backends returns every backend, for tests that must pass on each; see
// ForEachBackend.
func Backends() []Backend { return []Backend{DefaultBackend, PgvectorBackend} }

// ForEachBackend runs fn as a parallel subtest of t, named after the
// backend, once for each of Backends. Pass the backend to NewDatabase with
// OnBackend.
func ForEachBackend(t *testing.T, fn func(t *testing.T, b Backend)) {
	t.Helper()
	for _, b := range Backends() {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			fn(t, b)
		})
	}
}

// OnBackend creates the database on the shared server of backend b.
func OnBackend(b Backend) DBOption { return func(o *dbOptions) { o.backend = b } }

// WithPgvector creates the database on the shared server with pgvector;
// it is OnBackend(PgvectorBackend).
func WithPgvector() DBOption { return OnBackend(PgvectorBackend) }

// sharedServer returns the server of backend b that this test binary
// shares, starting it on first use.
func sharedServer(t testing.TB, b Backend) *Postgres {
	t.Helper()
	env := sharedEnv(t)
	if b == PgvectorBackend {
		return shared.pgvector.get(t, func(ctx context.Context) (*Postgres, error) { return pgvectorServer(ctx, env) })
	}
	return shared.pg.get(t, func(ctx context.Context) (*Postgres, error) { return postgresServer(ctx, env) })
}

// NewPgvector starts a PostgreSQL server with pgvector private to the test
// — one it can StopImmediate and Restart — and stops it when the test ends.
func NewPgvector(t testing.TB) *Postgres {
	t.Helper()
	return newPrivatePostgres(t, localPgvector)
}

// requirePgvector fails the test unless the migration installed pgvector
// in db: a pgvector test on a server without it would prove nothing.
func requirePgvector(ctx context.Context, t testing.TB, db *Database) {
	t.Helper()
	var installed bool
	if err := db.Pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'vector')`).Scan(&installed); err != nil {
		t.Fatalf("testenv: check pgvector in %s: %v", db.Name, err)
	}
	if !installed {
		t.Fatalf("testenv: the pgvector backend's database %s has no vector extension: does %s name a server with pgvector?", db.Name, PgvectorURLEnv)
	}
}
