package systemtest

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sluicehq/sluice/internal/dev/embedsim"
	"github.com/sluicehq/sluice/internal/dev/localenv"
	"github.com/sluicehq/sluice/internal/dev/testenv"
	"github.com/sluicehq/sluice/internal/platform/natsauth"
	"github.com/sluicehq/sluice/migrations"
)

// Every process of a deployment — the migrating CLI, the producer, the
// consumer, the outbox relay, the DLQ replayer and the operator CLI — runs
// as its own binary against a PostgreSQL that accepts only verified TLS
// with scram-sha-256 (sslmode=verify-full&sslrootcert=… in DATABASE_URL and
// MIGRATE_DATABASE_URL) and a NATS that requires TLS with client
// certificates. The pipeline delivers, reconcile finds nothing leaked,
// the server reports TLS for every service's session, and the server
// refuses a plain connection and a client that trusts another CA.
func TestServicesOverTLSToPostgresAndNATS(t *testing.T) {
	t.Parallel()
	d := newTLSDeployment(t)
	migrate := []string{"MIGRATE_DATABASE_URL=" + d.ownerURL}
	for _, r := range migrations.Roles {
		migrate = append(migrate, r.PasswordEnv+"="+d.passwords[r.Name])
	}
	if code, out := d.run("sluice", d.env("sluice", migrate...), "migrate", "up"); code != 0 {
		t.Fatalf("sluice migrate up over TLS: code %d\n%s", code, out)
	}
	if code, out := d.run("sluice", d.envAs(natsauth.Owner, "sluice"), "nats", "setup", "--ack-wait", "30s"); code != 0 {
		t.Fatalf("sluice nats setup over TLS: code %d\n%s", code, out)
	}
	for _, name := range []string{"consumer", "outbox-relay", "dlq-replayer"} {
		d.service(name)
	}
	corpus := filepath.Join(t.TempDir(), "corpus")
	if err := os.MkdirAll(corpus, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range docs("tls", 6) {
		if err := os.WriteFile(filepath.Join(corpus, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if code, out := d.run("producer", d.env("producer", "CHUNK_SIZE=400", "CHUNK_UNIT=chars"), "--source", "tls", corpus); code != 0 {
		t.Fatalf("producer over TLS: code %d\n%s", code, out)
	}
	testenv.Eventually(t, 60*time.Second, "6 vectors stored over TLS", func() bool {
		return d.count(`SELECT count(*) FROM chunk_embeddings`) == 6 &&
			d.count(`SELECT count(*) FROM ingest_manifest WHERE status <> 'stored'`) == 0
	})
	code, out := d.run("sluice", d.env("sluice"), "reconcile")
	if code != 0 || !strings.Contains(out, "leaked: 0 ") {
		t.Fatalf("reconcile over TLS: code %d, want 0 and nothing leaked\n%s", code, out)
	}

	d.assertServiceSessionsUseTLS("sluice-consumer", "sluice-outbox-relay", "sluice-dlq-replayer")

	// What an operator sees when a client does not speak TLS, or trusts
	// the wrong CA: the server's refusal, the certificate error, and the
	// URL with its TLS parameters and without its password.
	otherCA, _, err := localenv.WriteTLSFiles(filepath.Join(t.TempDir(), "other-ca"))
	if err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct{ url, want string }{
		"sslmode=disable":         {withParam(t, d.roleURL("sluice"), "sslmode", "disable"), "no encryption"},
		"verify-full, wrong CA":   {withParam(t, d.roleURL("sluice"), "sslrootcert", otherCA.CA), "x509: certificate signed by unknown authority"},
		"verify-full, CA missing": {withParam(t, d.roleURL("sluice"), "sslrootcert", filepath.Join(t.TempDir(), "missing.pem")), "missing.pem"},
	} {
		code, out := d.run("sluice", append(d.env("sluice"), "DATABASE_URL="+c.url), "reconcile")
		switch {
		case code == 0:
			t.Errorf("%s: reconcile succeeded\n%s", name, out)
		case !strings.Contains(out, c.want):
			t.Errorf("%s: want %q in the error\n%s", name, c.want, out)
		case strings.Contains(out, d.passwords[migrations.OperatorRole]):
			t.Errorf("%s: the error prints the password\n%s", name, out)
		case !strings.Contains(out, "sslrootcert="):
			t.Errorf("%s: the error's URL lost sslrootcert\n%s", name, out)
		}
	}
}

// tlsDeployment is one test's TLS-only PostgreSQL, TLS NATS, embedder
// and service processes.
type tlsDeployment struct {
	t    *testing.T
	dir  string
	bin  string
	pg   *localenv.Postgres
	nats *testenv.NATS
	sim  *embedsim.Server
	// ownerURL is the superuser's, on the deployment's database; pool
	// uses it for the test's own queries.
	ownerURL string
	// passwords are each role's login password, by role name.
	passwords map[string]string
	pool      *pgxpool.Pool

	mu    sync.Mutex
	procs []*localenv.Process
}

func newTLSDeployment(t *testing.T) *tlsDeployment {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	env, err := localenv.New()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Close() })
	pg, err := env.LocalPostgres(ctx, localenv.WithPostgresTLS())
	if err != nil {
		t.Fatal(err)
	}
	if err := localenv.AdminExec(ctx, pg.URL, `CREATE DATABASE sluice`); err != nil {
		t.Fatal(err)
	}
	d := &tlsDeployment{t: t, dir: t.TempDir(), bin: testenv.Binaries(t), pg: pg,
		nats: testenv.NewNATS(t, testenv.WithTLS()), sim: embedsim.StartTest(t, embedsim.Config{Dims: dims}),
		ownerURL:  withUser(t, pg.URL, "postgres", "", "sluice"),
		passwords: map[string]string{}}
	for _, r := range migrations.Roles {
		d.passwords[r.Name] = r.Name + "-" + randomHex(t)
	}
	if d.pool, err = pgxpool.New(ctx, d.ownerURL); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.stop)
	return d
}

// roleURL is binary's PostgreSQL URL over TLS, as its own role.
func (d *tlsDeployment) roleURL(binary string) string {
	role, err := migrations.RoleForBinary(binary)
	if err != nil {
		d.t.Fatal(err)
	}
	return withUser(d.t, d.pg.URL, role, d.passwords[role], "sluice")
}

// env is what binary gets: PostgreSQL as its own role over TLS, NATS as
// binary's role over TLS, and extra.
func (d *tlsDeployment) env(binary string, extra ...string) []string {
	role, err := natsauth.ForBinary(binary)
	if err != nil {
		d.t.Fatal(err)
	}
	return d.envAs(role, binary, extra...)
}

// envAs is env with role's NATS credentials.
func (d *tlsDeployment) envAs(role natsauth.Role, binary string, extra ...string) []string {
	env := append(d.nats.Env(role), "DATABASE_URL="+d.roleURL(binary), "EMBEDDER_URL="+d.sim.URL(),
		fmt.Sprintf("EMBEDDING_DIMS=%d", dims), "LOG_FORMAT=json", "RELAY_POLL_INTERVAL=200ms", "USER=ops")
	return append(env, extra...)
}

// service starts a long-running binary and waits until it is ready.
func (d *tlsDeployment) service(binary string) {
	d.t.Helper()
	addr, err := localenv.FreeAddr()
	if err != nil {
		d.t.Fatal(err)
	}
	p, err := localenv.Start(localenv.Command{Name: binary, Path: filepath.Join(d.bin, binary),
		Env: d.env(binary, "METRICS_ADDR="+addr), Log: filepath.Join(d.dir, binary+".log")})
	if err != nil {
		d.t.Fatal(err)
	}
	d.mu.Lock()
	d.procs = append(d.procs, p)
	d.mu.Unlock()
	if err := p.WaitReady(90*time.Second, localenv.HTTPReady("http://"+addr+"/readyz")); err != nil {
		d.t.Fatalf("%s: %v\n%s", binary, err, p.LogTail(3000))
	}
}

// run runs a one-shot binary with exactly env (and PATH) and returns its
// exit code and combined output.
func (d *tlsDeployment) run(binary string, env []string, args ...string) (int, string) {
	d.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(d.bin, binary), args...)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + d.dir}, env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return exit.ExitCode(), out.String()
	}
	if err != nil {
		d.t.Fatalf("%s %v: %v", binary, args, err)
	}
	return 0, out.String()
}

func (d *tlsDeployment) stop() {
	d.mu.Lock()
	procs := d.procs
	d.mu.Unlock()
	for _, p := range procs {
		_ = p.Stop(30 * time.Second)
		if d.t.Failed() {
			d.t.Logf("--- %s", p.LogTail(3000))
		}
	}
	d.pool.Close()
}

func (d *tlsDeployment) count(query string) int {
	d.t.Helper()
	var n int
	if err := d.pool.QueryRow(context.Background(), query).Scan(&n); err != nil {
		d.t.Fatalf("%s: %v", query, err)
	}
	return n
}

// assertServiceSessionsUseTLS checks, as the server sees them, that each
// of apps (sluice-<binary>) has a session as its binary's role, and that every client session
// on the server runs over TLS.
func (d *tlsDeployment) assertServiceSessionsUseTLS(apps ...string) {
	d.t.Helper()
	rows, err := d.pool.Query(context.Background(), `SELECT a.application_name, a.usename, s.ssl, coalesce(s.version, '')
		FROM pg_stat_activity a JOIN pg_stat_ssl s USING (pid)
		WHERE a.backend_type = 'client backend'`)
	if err != nil {
		d.t.Fatal(err)
	}
	defer rows.Close()
	seen := map[string]bool{}
	for rows.Next() {
		var app, user, version string
		var ssl bool
		if err := rows.Scan(&app, &user, &ssl, &version); err != nil {
			d.t.Fatal(err)
		}
		if !ssl {
			d.t.Errorf("session of %q as %s without TLS", app, user)
		}
		seen[app+" as "+user] = true
	}
	if err := rows.Err(); err != nil {
		d.t.Fatal(err)
	}
	for _, app := range apps {
		role, err := migrations.RoleForBinary(strings.TrimPrefix(app, "sluice-"))
		if err != nil {
			d.t.Fatal(err)
		}
		if !seen[app+" as "+role] {
			d.t.Errorf("no session of %s as %s; sessions seen: %v", app, role, seen)
		}
	}
}

// withUser is the postgres:// URL raw as user (with password, when not
// empty; else raw's own) on database db, its TLS parameters kept.
func withUser(t *testing.T, raw, user, password, db string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	if password == "" {
		password, _ = u.User.Password()
	}
	u.User, u.Path = url.UserPassword(user, password), "/"+db
	return u.String()
}

// withParam is raw with its query parameter key set to value.
func withParam(t *testing.T, raw, key, value string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set(key, value)
	u.RawQuery = q.Encode()
	return u.String()
}

func randomHex(t *testing.T) string {
	t.Helper()
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%x", b)
}
