package cli_test

import (
	"bytes"
	"context"
	"maps"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/dev/testenv"
	"github.com/sluicehq/sluice/internal/ops/cli"
	"github.com/sluicehq/sluice/migrations"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// sluice runs the CLI with the given environment and returns its exit
// status, stdout and stderr.
func sluice(t *testing.T, envVars map[string]string, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	env := cli.Env{Stdout: &stdout, Stderr: &stderr, Lookup: func(k string) (string, bool) {
		v, ok := envVars[k]
		return v, ok
	}}
	code := cli.Run(context.Background(), env, args)
	return code, stdout.String(), stderr.String()
}

func TestMigrateUpOnEmptyDatabaseThenNoOp(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testenv.NewDatabase(t)
	// Start from an empty schema: the template is migrated, so undo it.
	if _, err := db.Pool.Exec(ctx, `DROP SCHEMA public CASCADE; CREATE SCHEMA public`); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"DATABASE_URL": db.URL}

	code, out, errOut := sluice(t, env, "migrate", "status")
	if code != 0 || strings.Contains(out, "applied") || !strings.Contains(out, "pending") {
		t.Fatalf("status on empty db: code=%d out=%q err=%q", code, out, errOut)
	}
	code, _, errOut = sluice(t, env, "migrate", "up", "--embedding-dims", "8")
	if code != 0 {
		t.Fatalf("migrate up: code=%d stderr=%q", code, errOut)
	}
	for _, table := range []string{"documents", "ingest_manifest", "chunk_embeddings", "outbox", "dead_letters", "ingest_runs", "replay_audit"} {
		var exists bool
		if err := db.Pool.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, table).Scan(&exists); err != nil || !exists {
			t.Errorf("table %s missing after migrate up (err=%v)", table, err)
		}
	}
	var dims string
	if err := db.Pool.QueryRow(ctx, `SELECT value FROM sluice_settings WHERE key = 'embedding_dims'`).Scan(&dims); err != nil || dims != "8" {
		t.Fatalf("embedding_dims = %q (%v), want 8", dims, err)
	}

	code, _, errOut = sluice(t, env, "migrate", "up", "--embedding-dims", "8")
	if code != 0 || strings.Contains(errOut, "OK ") {
		t.Fatalf("second migrate up should be a no-op: code=%d stderr=%q", code, errOut)
	}
	code, out, _ = sluice(t, env, "migrate", "status")
	if code != 0 || strings.Contains(out, "pending") {
		t.Fatalf("after up, status still shows pending: %q", out)
	}
}

func TestMigrateRejectsBadInput(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"unknown action", []string{"migrate", "sideways"}, "use up or status"},
		{"bad dims", []string{"migrate", "--embedding-dims", "nine"}, "not an integer"},
		{"unknown command", []string{"migrat"}, "unknown command"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errOut := sluice(t, nil, tc.args...)
			if code != 2 || !strings.Contains(errOut, tc.want) {
				t.Fatalf("code=%d stderr=%q; want 2 and %q", code, errOut, tc.want)
			}
		})
	}
}

// Services' DATABASE_URL names their own roles, which cannot migrate;
// migrate runs as MIGRATE_DATABASE_URL's owner and lets every role log in
// with the password it is given, refusing a shipped default outside a
// demo.
func TestMigrateAsOwnerSetsRolePasswords(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// A private server: role passwords belong to the whole cluster.
	db := testenv.NewDatabase(t, testenv.OnServer(testenv.NewPostgres(t)))
	env := map[string]string{"DATABASE_URL": db.RoleURL(migrations.OperatorRole), "MIGRATE_DATABASE_URL": db.URL}
	for _, role := range migrations.Roles {
		env[role.PasswordEnv] = strings.ReplaceAll(role.Name, "_", "-") + "-secret-4-long"
	}
	// A shipped default is refused, outside a demo, before anything changes.
	env["SLUICE_RELAY_PASSWORD"] = "sluice-outbox-relay"
	if code, _, errOut := sluice(t, env, "migrate", "up"); code != 2 || !strings.Contains(errOut, "SLUICE_RELAY_PASSWORD") {
		t.Fatalf("migrate up with a shipped relay password: code=%d stderr=%q; want a usage error naming SLUICE_RELAY_PASSWORD", code, errOut)
	}
	env["SLUICE_RELAY_PASSWORD"] = "relay-secret-4-long"
	code, _, errOut := sluice(t, env, "migrate", "up")
	if code != 0 {
		t.Fatalf("migrate up as owner: code=%d stderr=%q", code, errOut)
	}
	for _, role := range migrations.Roles {
		if strings.Contains(errOut, env[role.PasswordEnv]) {
			t.Fatalf("migrate printed %s's password: %q", role.Name, errOut)
		}
		var login, hasPassword bool
		if err := db.Pool.QueryRow(ctx, `SELECT rolcanlogin, rolpassword IS NOT NULL FROM pg_authid WHERE rolname = $1`, role.Name).Scan(&login, &hasPassword); err != nil {
			t.Fatal(err)
		}
		if !login || !hasPassword {
			t.Errorf("%s: login %v, password set %v; want both", role.Name, login, hasPassword)
		}
	}
	// With SLUICE_DEMO=1 the shipped passwords are accepted.
	demo := maps.Clone(env)
	demo["SLUICE_DEMO"], demo["SLUICE_RELAY_PASSWORD"] = "1", "sluice-outbox-relay"
	if code, _, errOut := sluice(t, demo, "migrate", "up"); code != 0 {
		t.Fatalf("migrate up in a demo with a shipped password: code=%d stderr=%q", code, errOut)
	}
	delete(env, "MIGRATE_DATABASE_URL")
	if code, _, errOut := sluice(t, env, "migrate", "up"); code != 1 {
		t.Fatalf("migrate up as the operator role: code %d, want 1: it may not migrate nor set passwords\n%s", code, errOut)
	}
}
