package startuptest

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/dev/localenv"
	"github.com/sluicehq/sluice/internal/dev/testenv"
	"github.com/sluicehq/sluice/internal/failure/dlq"
	"github.com/sluicehq/sluice/internal/failure/outboxrelay"
	"github.com/sluicehq/sluice/internal/ingest/consumer"
	"github.com/sluicehq/sluice/internal/ingest/producer"
	"github.com/sluicehq/sluice/internal/ops/cli"
	"github.com/sluicehq/sluice/internal/platform/broker"
	"github.com/sluicehq/sluice/internal/platform/natsauth"
	"github.com/sluicehq/sluice/internal/platform/service"
	"github.com/sluicehq/sluice/migrations"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// failFast is how soon a misconfigured binary must have exited.
const failFast = 5 * time.Second

// binary is one of Sluice's entry points, run as its main runs it.
type binary struct {
	name string
	role natsauth.Role
	db   string // the PostgreSQL role it connects as
	run  func(ctx context.Context, env map[string]string, stderr io.Writer) int
}

// serviceMain runs a service's Run as service.Main does, but returns
// the exit status and prints the failure on stderr rather than exiting.
func serviceMain(name string, run func(ctx context.Context, args []string, lookup func(string) (string, bool), stderr io.Writer) error, args ...string) func(context.Context, map[string]string, io.Writer) int {
	return func(ctx context.Context, env map[string]string, stderr io.Writer) int {
		err := run(ctx, args, lookupIn(env), stderr)
		code := service.ExitCode(err)
		if code != 0 {
			fmt.Fprintln(stderr, name+":", err)
		}
		return code
	}
}

func lookupIn(env map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := env[k]; return v, ok }
}

func binaries(t *testing.T) []binary {
	input := filepath.Join(t.TempDir(), "doc.txt")
	if err := os.WriteFile(input, []byte("a document that is never ingested"), 0o644); err != nil {
		t.Fatal(err)
	}
	runProducer := func(ctx context.Context, args []string, lookup func(string) (string, bool), stderr io.Writer) error {
		return producer.Run(ctx, args, lookup, strings.NewReader(""), io.Discard, stderr)
	}
	return []binary{
		{"producer", natsauth.Producer, migrations.ProducerRole, serviceMain("producer", runProducer, "--source", "misconfig", input)},
		{"consumer", natsauth.Consumer, migrations.ConsumerRole, serviceMain("consumer", consumer.Run)},
		{"outbox-relay", natsauth.Relay, migrations.RelayRole, serviceMain("outbox-relay", outboxrelay.Run)},
		{"dlq-replayer", natsauth.Replayer, migrations.ReplayerRole, serviceMain("dlq-replayer", dlq.Run)},
		{"sluice reconcile", natsauth.Operator, migrations.OperatorRole, func(ctx context.Context, env map[string]string, stderr io.Writer) int {
			return cli.Run(ctx, cli.Env{Stdout: io.Discard, Stderr: stderr, Lookup: lookupIn(env)}, []string{"reconcile"})
		}},
	}
}

// Every binary, given a setting that names the wrong server or
// credentials the server refuses, exits non-zero within failFast and
// names the setting, without printing a password.
func TestMisconfigurationStopsEveryBinaryAtOnce(t *testing.T) {
	t.Parallel()
	db := testenv.NewDatabase(t)
	n, _ := testenv.NewJetStream(t, broker.Topology{})
	closed := closedPort(t)
	web := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(web.Close)
	noGrants := roleWithoutGrants(t, db)
	const wrongPassword = "not-the-password-of-this-user"

	for _, b := range binaries(t) {
		good := map[string]string{
			"DATABASE_URL": db.RoleURL(b.db),
			"NATS_URL":     n.URLFor(b.role),
			"METRICS_ADDR": "",
		}
		for _, tc := range []struct {
			name    string
			setting string
			change  map[string]string
		}{
			{"wrong NATS password", "NATS_URL", map[string]string{"NATS_URL": natsauth.URLWithUser(baseOf(t, n.URL), string(b.role), wrongPassword)}},
			{"nothing on the NATS port", "NATS_URL", map[string]string{"NATS_URL": natsauth.URLWithUser("nats://"+closed, string(b.role), wrongPassword)}},
			{"an HTTP server on the NATS port", "NATS_URL", map[string]string{"NATS_URL": natsauth.URLWithUser(strings.Replace(web.URL, "http://", "nats://", 1), string(b.role), wrongPassword)}},
			{"a database that does not exist", "DATABASE_URL", map[string]string{"DATABASE_URL": otherDatabase(t, db.RoleURL(b.db), "no_such_database")}},
			{"a role without grants", "DATABASE_URL", map[string]string{"DATABASE_URL": localenv.AsRole(db.URL, noGrants)}},
		} {
			t.Run(b.name+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				env := map[string]string{}
				for k, v := range good {
					env[k] = v
				}
				for k, v := range tc.change {
					env[k] = v
				}
				// The outer bound only keeps a binary that waits from
				// holding the test for its whole patience.
				ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
				defer cancel()
				var stderr testenv.Buffer
				start := time.Now()
				code := b.run(ctx, env, &stderr)
				took := time.Since(start)
				out := stderr.String()
				if code == 0 || took > failFast {
					t.Fatalf("%s exited %d after %s; want a non-zero exit within %s:\n%s", b.name, code, took.Round(time.Millisecond), failFast, tail(out))
				}
				t.Logf("exit %d after %s: %s", code, took.Round(time.Millisecond), lastLine(out))
				if !strings.Contains(out, tc.setting+" ") {
					t.Errorf("%s's message does not name %s:\n%s", b.name, tc.setting, tail(out))
				}
				if strings.Contains(out, wrongPassword) {
					t.Errorf("%s printed the password:\n%s", b.name, tail(out))
				}
			})
		}
	}
}

// closedPort is a local address nothing listens on.
func closedPort(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return addr
}

// baseOf is a NATS URL without its credentials.
func baseOf(t *testing.T, raw string) string {
	i := strings.Index(raw, "@")
	if i < 0 {
		t.Fatalf("NATS URL %q carries no credentials", raw)
	}
	return "nats://" + raw[i+1:]
}

// otherDatabase is raw naming another database.
func otherDatabase(t *testing.T, raw, name string) string {
	i := strings.LastIndex(raw, "/")
	if i < 0 {
		t.Fatalf("no database in %q", raw)
	}
	rest := ""
	if q := strings.Index(raw[i:], "?"); q >= 0 {
		rest = raw[i+q:]
	}
	return raw[:i+1] + name + rest
}

// roleWithoutGrants creates a role that may log in and has no other
// privilege, and drops it when the test ends.
func roleWithoutGrants(t *testing.T, db *testenv.Database) string {
	name := fmt.Sprintf("nogrants_%d", time.Now().UnixNano())
	if _, err := db.Pool.Exec(t.Context(), "CREATE ROLE "+name+" LOGIN"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = db.Pool.Exec(context.Background(), "DROP ROLE IF EXISTS "+name) })
	return name
}

// tail is the end of a long log, enough to say why.
func tail(s string) string {
	if len(s) > 3000 {
		return "…" + s[len(s)-3000:]
	}
	return s
}

// lastLine is the last line of a log: the binary's own failure.
func lastLine(s string) string {
	s = strings.TrimRight(s, "\n")
	return s[strings.LastIndexByte(s, '\n')+1:]
}
