package cli

import (
	"context"
	"errors"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/sluicehq/sluice/internal/platform/config"
	"github.com/sluicehq/sluice/internal/store/generation"
	"github.com/sluicehq/sluice/migrations"
	"github.com/sluicehq/sluice/pkg/vectorstore"
)

// postgresFindings are doctor's checks of PostgreSQL, and the schema's
// embedding dimension (0 when it could not be read) for the embedder's.
type postgresFindings struct {
	checks     []check
	schemaDims int
}

// The names of doctor's PostgreSQL checks.
const (
	postgresCheck    = "postgres"
	migrationsCheck  = "migrations"
	vectorStoreCheck = "vector store"
)

func roleCheckName(r migrations.Role) string { return "role " + r.Name }

// checkPostgres connects with DATABASE_URL and checks the schema and the
// service roles; when it cannot connect, every other check of PostgreSQL
// is skipped.
func checkPostgres(ctx context.Context, o doctorOptions) postgresFindings {
	var f postgresFindings
	cctx, cancel := context.WithTimeout(ctx, o.timeout)
	conn, err := pgx.Connect(cctx, o.DatabaseURL)
	cancel()
	if err != nil {
		f.checks = append(f.checks, settingCheck(postgresCheck, "DATABASE_URL", config.Redact(o.DatabaseURL), o.Fault("sluice", err, true)))
		for _, name := range []string{migrationsCheck, vectorStoreCheck} {
			f.checks = append(f.checks, skipped(name, "PostgreSQL unreachable"))
		}
		for _, r := range migrations.Roles {
			f.checks = append(f.checks, skipped(roleCheckName(r), "PostgreSQL unreachable"))
		}
		return f
	}
	defer conn.Close(context.WithoutCancel(ctx))
	f.checks = append(f.checks, bounded(ctx, o, func(ctx context.Context) check { return connected(ctx, conn, o.DatabaseURL) }))
	f.checks = append(f.checks, bounded(ctx, o, func(ctx context.Context) check { return checkMigrations(ctx, o.DatabaseURL) }))
	f.checks = append(f.checks, bounded(ctx, o, func(ctx context.Context) check {
		var c check
		c, f.schemaDims = checkVectorStore(ctx, conn, o.EmbeddingDims)
		return c
	}))
	cctx, cancel = context.WithTimeout(ctx, o.timeout)
	defer cancel()
	f.checks = append(f.checks, checkRoles(cctx, conn)...)
	return f
}

// bounded runs one check within the check timeout.
func bounded(ctx context.Context, o doctorOptions, fn func(context.Context) check) check {
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	return fn(ctx)
}

// connected says whom DATABASE_URL connected as, to which server.
func connected(ctx context.Context, conn *pgx.Conn, url string) check {
	var user, version string
	if err := conn.QueryRow(ctx, `SELECT current_user, current_setting('server_version')`).Scan(&user, &version); err != nil {
		return failCheck(postgresCheck, "DATABASE_URL", "connected to %s but could not query it: %v", config.Redact(url), err)
	}
	return okCheck(postgresCheck, "connected to %s as %s (PostgreSQL %s)", config.Redact(url), user, version)
}

// checkMigrations says whether every migration of this build is applied.
func checkMigrations(ctx context.Context, url string) check {
	st, err := migrations.List(ctx, url)
	if err != nil {
		return failCheck(migrationsCheck, "DATABASE_URL", "cannot read the migrations applied: %v; run sluice migrate as the schema owner (MIGRATE_DATABASE_URL)", err)
	}
	var pending []string
	for _, s := range st {
		if !s.Applied {
			pending = append(pending, s.Source)
		}
	}
	switch {
	case len(pending) == len(st):
		return failCheck(migrationsCheck, "DATABASE_URL", "the database holds no Sluice schema: run sluice migrate as the schema owner (MIGRATE_DATABASE_URL), or fix DATABASE_URL if it names the wrong database")
	case len(pending) > 0:
		return failCheck(migrationsCheck, "", "%d of %d pending (%s): run sluice migrate as the schema owner (MIGRATE_DATABASE_URL) before starting this build's services",
			len(pending), len(st), strings.Join(pending, ", "))
	}
	return okCheck(migrationsCheck, "%d applied, none pending", len(st))
}

// checkVectorStore reads the embedding column's type and dimension and
// holds the dimension against EMBEDDING_DIMS; it returns the schema's
// dimension, 0 when it could not be read.
func checkVectorStore(ctx context.Context, conn *pgx.Conn, dims int) (check, int) {
	g, err := generation.Get(ctx, conn, 1)
	if err != nil {
		return failCheck(vectorStoreCheck, "", "cannot read the schema's embedding dimension: %v; run sluice migrate", err), 0
	}
	store, err := vectorstore.Open(ctx, conn, dims)
	if errors.Is(err, vectorstore.ErrDimsMismatch) {
		return failCheck(vectorStoreCheck, "EMBEDDING_DIMS", "%v", err), g.Dims
	}
	if err != nil {
		return failCheck(vectorStoreCheck, "", "%v", err), g.Dims
	}
	if store.Mode() == vectorstore.ModeVector {
		var version string
		if err := conn.QueryRow(ctx, `SELECT coalesce(max(extversion), '?') FROM pg_extension WHERE extname = 'vector'`).Scan(&version); err != nil {
			return failCheck(vectorStoreCheck, "", "read pgvector's version: %v", err), g.Dims
		}
		return okCheck(vectorStoreCheck, "pgvector %s, embeddings of %d dimensions, as EMBEDDING_DIMS says", version, g.Dims), g.Dims
	}
	return okCheck(vectorStoreCheck, "real[] embeddings of %d dimensions, as EMBEDDING_DIMS says (the server had no pgvector when migrated: search compares every vector; for an index, migrate a new database on a server with pgvector)", g.Dims), g.Dims
}

// checkRoles checks that each service role exists and may log in, and,
// where the connected user may read pg_authid, that it has a password.
func checkRoles(ctx context.Context, conn *pgx.Conn) []check {
	out := make([]check, 0, len(migrations.Roles))
	canLogin := map[string]bool{}
	rows, err := conn.Query(ctx, `SELECT rolname, rolcanlogin FROM pg_roles WHERE rolname = ANY($1)`, roleNames())
	if err == nil {
		var name string
		var login bool
		_, err = pgx.ForEachRow(rows, []any{&name, &login}, func() error { canLogin[name] = login; return nil })
	}
	if err != nil {
		for _, r := range migrations.Roles {
			out = append(out, failCheck(roleCheckName(r), "", "cannot read the roles: %v", err))
		}
		return out
	}
	passwords, visible := rolePasswords(ctx, conn)
	for _, r := range migrations.Roles {
		out = append(out, roleCheck(r, canLogin, passwords, visible))
	}
	return out
}

// roleCheck is the check of role r, given which roles exist and may log
// in, and, when visible, which have a password.
func roleCheck(r migrations.Role, canLogin, passwords map[string]bool, visible bool) check {
	name := roleCheckName(r)
	login, exists := canLogin[r.Name]
	switch {
	case !exists:
		return failCheck(name, "DATABASE_URL", "%s's role is missing: run sluice migrate as the schema owner (MIGRATE_DATABASE_URL), or fix DATABASE_URL if it names the wrong server", r.For)
	case !login:
		return failCheck(name, r.PasswordEnv, "%s's role may not log in (NOLOGIN): set %s and run sluice migrate as the schema owner, which lets it log in with that password", r.For, r.PasswordEnv)
	case !visible:
		return okCheck(name, "may log in (whether it has a password only a superuser can see)")
	case !passwords[r.Name]:
		return warnCheck(name, r.PasswordEnv, "may log in but has no password, so only a server that trusts its connections lets %s in: set %s and run sluice migrate as the schema owner", r.For, r.PasswordEnv)
	}
	return okCheck(name, "may log in with a password")
}

// rolePasswords reads which service roles have a password; visible is
// false when the connected user may not read pg_authid (only a superuser
// may).
func rolePasswords(ctx context.Context, conn *pgx.Conn) (passwords map[string]bool, visible bool) {
	passwords = map[string]bool{}
	rows, err := conn.Query(ctx, `SELECT rolname, rolpassword IS NOT NULL FROM pg_authid WHERE rolname = ANY($1)`, roleNames())
	if err == nil {
		var name string
		var has bool
		_, err = pgx.ForEachRow(rows, []any{&name, &has}, func() error { passwords[name] = has; return nil })
	}
	if pgErr, ok := errors.AsType[*pgconn.PgError](err); ok && pgErr.Code == "42501" { // insufficient_privilege
		return nil, false
	}
	return passwords, err == nil
}

func roleNames() []string {
	names := make([]string, len(migrations.Roles))
	for i, r := range migrations.Roles {
		names[i] = r.Name
	}
	return names
}
