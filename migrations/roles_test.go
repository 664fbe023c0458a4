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

// The runtime role reads and writes rows and can change nothing else.
func TestRuntimeRoleHasDMLOnly(t *testing.T) {
	t.Parallel()
	db := testenv.NewDatabase(t)
	rt := connect(t, db.RuntimeURL)
	allowed(t, rt, `INSERT INTO ingest_runs (run_id, source_id) VALUES ('r1', 's')`)
	allowed(t, rt, `UPDATE ingest_runs SET status = 'completed' WHERE run_id = 'r1'`)
	allowed(t, rt, `INSERT INTO escalated_chunks (doc_id, chunk_index, version, rule, text) VALUES ('d', 0, 1, 'r', 'secret')`)
	allowed(t, rt, `SELECT count(*) FROM escalated_chunks`)
	allowed(t, rt, `DELETE FROM ingest_runs WHERE run_id = 'r1'`)
	for _, sql := range []string{
		`CREATE TABLE rogue (id int)`,
		`ALTER TABLE documents ADD COLUMN rogue int`,
		`DROP TABLE outbox`,
		`TRUNCATE dead_letters`,
		`CREATE INDEX rogue ON documents (status)`,
		`UPDATE sluice_settings SET value = '1' WHERE key = 'embedding_dims'`,
		`DELETE FROM goose_db_version`,
	} {
		denied(t, rt, sql)
	}
}

// The read-only role reads what reports need and never a secret's text.
func TestReadonlyRoleCannotReadEscalatedText(t *testing.T) {
	t.Parallel()
	db := testenv.NewDatabase(t)
	if _, err := db.Pool.Exec(t.Context(), `INSERT INTO escalated_chunks (doc_id, chunk_index, version, rule, text) VALUES ('d', 0, 1, 'r', 'AKIA secret')`); err != nil {
		t.Fatal(err)
	}
	ro := connect(t, db.ReadonlyURL)
	allowed(t, ro, `SELECT count(*) FROM dead_letters`)
	allowed(t, ro, `SELECT count(*) FROM ingest_manifest`)
	denied(t, ro, `SELECT text FROM escalated_chunks`)
	denied(t, ro, `SELECT count(*) FROM escalated_chunks`)
	denied(t, ro, `INSERT INTO ingest_runs (run_id, source_id) VALUES ('r1', 's')`)
	denied(t, ro, `DELETE FROM dead_letters`)
}

// A table a later migration creates is the runtime role's to write and
// the read-only role's to read, with no grant of its own.
func TestDefaultPrivilegesCoverLaterTables(t *testing.T) {
	t.Parallel()
	db := testenv.NewDatabase(t)
	if _, err := db.Pool.Exec(t.Context(), `CREATE TABLE later (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, v text)`); err != nil {
		t.Fatal(err)
	}
	allowed(t, connect(t, db.RuntimeURL), `INSERT INTO later (v) VALUES ('x')`)
	allowed(t, connect(t, db.ReadonlyURL), `SELECT v FROM later`)
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
	var roles int
	if err := admin.QueryRow(t.Context(), `SELECT count(*) FROM pg_roles WHERE rolname IN ('sluice_runtime', 'sluice_readonly')`).Scan(&roles); err != nil || roles != 2 {
		t.Fatalf("roles = %d (%v), want 2", roles, err)
	}
}
