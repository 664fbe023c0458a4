package testenv

import (
	"context"
	"os"

	"github.com/sluicehq/sluice/internal/dev/localenv"
)

// PgvectorURLEnv names the environment variable that gives tests an
// existing PostgreSQL server with the pgvector extension installable. Like
// DATABASE_URL, its database part is ignored and its user must be able to
// create databases.
const PgvectorURLEnv = "PGVECTOR_DATABASE_URL"

// pgvectorServer provides a PostgreSQL server with pgvector:
// PGVECTOR_DATABASE_URL when set, else a cluster in the pgvector root,
// else a container.
func pgvectorServer(ctx context.Context, e *localenv.Env) (*Postgres, error) {
	if raw := os.Getenv(PgvectorURLEnv); raw != "" {
		return externalPostgres(PgvectorURLEnv, raw)
	}
	return localPgvector(ctx, e)
}

// localPgvector starts a server with pgvector that this process controls
// — one that StopImmediate and Restart work on — ignoring
// PGVECTOR_DATABASE_URL: PostgreSQL 17 in the pgvector root
// (localenv.PgvectorRoot), started with chroot, else a container.
func localPgvector(ctx context.Context, e *localenv.Env) (*Postgres, error) {
	pg, rootErr := e.LocalPgvector(ctx)
	return orContainer(ctx, e, pg, rootErr, "PostgreSQL with pgvector", "pgvector root",
		PgvectorURLEnv+"; the root built by `make pgvector-root` (tests run as root)")
}
