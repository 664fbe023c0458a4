package migrations_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/sluicehq/sluice/internal/dev/testenv"
	"github.com/sluicehq/sluice/migrations"
)

func TestMain(m *testing.M) { testenv.Main(m) }

func connect(t *testing.T, url string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// denied asserts that sql fails for lack of privilege (SQLSTATE 42501).
func denied(t *testing.T, conn *pgx.Conn, sql string) {
	t.Helper()
	_, err := conn.Exec(t.Context(), sql)
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "42501" {
		t.Errorf("%s as %s: %v, want insufficient_privilege (42501)", sql, conn.Config().User, err)
	}
}

func allowed(t *testing.T, conn *pgx.Conn, sql string) {
	t.Helper()
	if _, err := conn.Exec(t.Context(), sql); err != nil {
		t.Errorf("%s as %s: %v", sql, conn.Config().User, err)
	}
}

// No role but the owner can change the schema, the schema's version or
// its fixed settings.
func TestServiceRolesCannotChangeTheSchema(t *testing.T) {
	t.Parallel()
	db := testenv.NewDatabase(t)
	for _, role := range migrations.Roles {
		conn := connect(t, db.RoleURL(role.Name))
		for _, sql := range []string{
			`CREATE TABLE rogue (id int)`,
			`ALTER TABLE documents ADD COLUMN rogue int`,
			`DROP TABLE outbox`,
			`TRUNCATE dead_letters`,
			`CREATE INDEX rogue ON documents (status)`,
			`UPDATE sluice_settings SET value = '1' WHERE key = 'embedding_dims'`,
			`DELETE FROM goose_db_version`,
			`ALTER TABLE outbox DROP CONSTRAINT outbox_dead_letter`,
		} {
			denied(t, conn, sql)
		}
		allowed(t, conn, `SELECT value FROM sluice_settings`)
	}
}

// The role every service shared before migration 20 keeps nothing.
func TestRuntimeRoleKeepsNothing(t *testing.T) {
	t.Parallel()
	db := testenv.NewDatabase(t)
	var n int
	if err := db.Pool.QueryRow(t.Context(), `
		SELECT count(*) FROM information_schema.role_table_grants WHERE grantee = $1`, migrations.RuntimeRole).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("%s holds %d table privileges, want none", migrations.RuntimeRole, n)
	}
}

// The read-only role reads what reports need and never a secret's text.
func TestReadonlyRoleCannotReadEscalatedText(t *testing.T) {
	t.Parallel()
	db := testenv.NewDatabase(t)
	if _, err := db.Pool.Exec(t.Context(), `INSERT INTO escalated_chunks (doc_id, chunk_index, version, rule, text) VALUES ('d', 0, 1, 'r', 'AKIA secret')`); err != nil {
		t.Fatal(err)
	}
	ro := connect(t, db.RoleURL(migrations.ReadonlyRole))
	allowed(t, ro, `SELECT count(*) FROM dead_letters`)
	allowed(t, ro, `SELECT count(*) FROM ingest_manifest`)
	denied(t, ro, `SELECT text FROM escalated_chunks`)
	denied(t, ro, `SELECT count(*) FROM escalated_chunks`)
	denied(t, ro, `SELECT reveal_escalated_text('d', 0, 1, 'me', 'curious')`)
	denied(t, ro, `INSERT INTO ingest_runs (run_id, source_id) VALUES ('r1', 's')`)
	denied(t, ro, `DELETE FROM dead_letters`)
}

// A table a later migration creates is the read-only role's to read with
// no grant of its own, and no service role's to touch until its migration
// grants it.
func TestDefaultPrivilegesCoverLaterTables(t *testing.T) {
	t.Parallel()
	db := testenv.NewDatabase(t)
	if _, err := db.Pool.Exec(t.Context(), `CREATE TABLE later (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, v text)`); err != nil {
		t.Fatal(err)
	}
	allowed(t, connect(t, db.RoleURL(migrations.ReadonlyRole)), `SELECT v FROM later`)
	for _, role := range migrations.Roles {
		if role.Name != migrations.ReadonlyRole {
			denied(t, connect(t, db.RoleURL(role.Name)), `INSERT INTO later (v) VALUES ('x')`)
		}
	}
}

// Roles belong to the cluster: migrating several new databases at once on
// a server without the roles yet creates them once and fails none.
func TestRolesMigrationIsSafeConcurrently(t *testing.T) {
	t.Parallel()
	pg := testenv.NewPostgres(t)
	admin := connect(t, pg.URL)
	const n = 4
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		name := fmt.Sprintf("roles_%d", i)
		if _, err := admin.Exec(t.Context(), `CREATE DATABASE `+name); err != nil {
			t.Fatal(err)
		}
		cfg := admin.Config().Copy()
		cfg.Database = name
		url := fmt.Sprintf("postgres://%s@%s:%d/%s?sslmode=disable", cfg.User, cfg.Host, cfg.Port, name)
		wg.Go(func() { errs[i] = migrations.Up(t.Context(), url, migrations.Options{}) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("database %d: %v", i, err)
		}
	}
	names := []string{migrations.RuntimeRole}
	for _, role := range migrations.Roles {
		names = append(names, role.Name)
	}
	var roles int
	if err := admin.QueryRow(t.Context(), `SELECT count(*) FROM pg_roles WHERE rolname = ANY($1)`, names).Scan(&roles); err != nil || roles != len(names) {
		t.Fatalf("roles = %d (%v), want %d", roles, err, len(names))
	}
}

// A run's file counts (migration 35) are the producer's to write and the
// console's, the operator's and the read-only role's to read.
func TestRunFilesColumnsFollowTheirTable(t *testing.T) {
	t.Parallel()
	db := testenv.NewDatabase(t)
	const (
		write = `UPDATE ingest_runs SET files_seen = 1, files_read = 1, files_parked = 0, files_excluded = '{"hidden": 0}' WHERE false`
		read  = `SELECT files_seen, files_read, files_parked, files_excluded FROM ingest_runs`
	)
	allowed(t, connect(t, db.RoleURL(migrations.ProducerRole)), write)
	for _, role := range []string{migrations.ConsoleRole, migrations.OperatorRole, migrations.ReadonlyRole} {
		allowed(t, connect(t, db.RoleURL(role)), read)
	}
	denied(t, connect(t, db.RoleURL(migrations.ConsoleRole)), write)
	denied(t, connect(t, db.RoleURL(migrations.ReadonlyRole)), write)
	if _, err := db.Pool.Exec(t.Context(), `INSERT INTO ingest_runs (run_id, source_id, files_excluded) VALUES ('r', 's', '[]')`); err == nil {
		t.Error("files_excluded accepts an array; want an object of counts by reason")
	}
}
