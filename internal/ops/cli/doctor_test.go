package cli_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"net/url"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/dev/embedsim"
	"github.com/sluicehq/sluice/internal/dev/testenv"
	"github.com/sluicehq/sluice/internal/platform/broker"
	"github.com/sluicehq/sluice/internal/platform/natsauth"
	"github.com/sluicehq/sluice/migrations"
)

const (
	doctorDims = 16
	// wrongDimsModel is a model the simulator answers with one dimension
	// more than asked for, as a model that ignores the dimensions
	// parameter does.
	wrongDimsModel = "wrong-dims-1"
)

// doctorCheck is one line of `sluice doctor --json`.
type doctorCheck struct {
	Check   string `json:"check"`
	Status  string `json:"status"`
	Detail  string `json:"detail"`
	Setting string `json:"setting"`
}

// doctorReport is the output of `sluice doctor --json`.
type doctorReport struct {
	OK     bool          `json:"ok"`
	Checks []doctorCheck `json:"checks"`
}

func (r doctorReport) get(t *testing.T, name string) doctorCheck {
	t.Helper()
	for _, c := range r.Checks {
		if c.Check == name {
			return c
		}
	}
	t.Fatalf("no check %q in %+v", name, r.Checks)
	return doctorCheck{}
}

func (r doctorReport) String() string {
	var b strings.Builder
	for _, c := range r.Checks {
		fmt.Fprintf(&b, "%-4s  %s: %s [%s]\n", c.Status, c.Check, c.Detail, c.Setting)
	}
	return b.String()
}

// doctor runs `sluice doctor --json` and returns its exit status and
// report.
func doctor(t *testing.T, env map[string]string) (int, doctorReport) {
	t.Helper()
	code, out, errOut := sluice(t, env, "doctor", "--json")
	var r doctorReport
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("doctor --json: %v\nstdout=%q\nstderr=%q", err, out, errOut)
	}
	return code, r
}

// closedPort is a loopback address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
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

// atHost is raw with its host and port replaced by hostPort.
func atHost(t *testing.T, raw, hostPort string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	u.Host = hostPort
	return u.String()
}

// A healthy, migrated setup passes every check; each misconfiguration a
// newcomer makes is then a FAIL naming the setting to fix, exit 1, and
// does not hide the checks of the other dependencies.
func TestDoctorReportsEachMisconfigurationNamingItsSetting(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// A private server: roles, their logins and passwords, are the whole
	// cluster's.
	db := testenv.NewDatabase(t, testenv.OnServer(testenv.NewPostgres(t)), testenv.WithDims(doctorDims))
	nats, _ := testenv.NewJetStream(t, broker.Topology{})
	sim := embedsim.StartTest(t, embedsim.Config{Dims: 64, Faults: embedsim.Faults{
		Poison: []embedsim.PoisonRule{{Match: ".", Regex: true, Kind: embedsim.PoisonWrongDims, Model: wrongDimsModel}},
	}})
	refusing := embedsim.StartTest(t, embedsim.Config{Dims: doctorDims, RefuseDims: true})
	env := map[string]string{
		"DATABASE_URL": db.URL, "NATS_URL": nats.URLFor(natsauth.Operator),
		"EMBEDDER_URL": sim.URL(), "EMBEDDER_MODEL": "text-embedding-3-small", "EMBEDDING_DIMS": fmt.Sprint(doctorDims),
	}

	// Roles that log in without a password are a warning naming where
	// their password goes; nothing fails.
	code, r := doctor(t, env)
	if c := r.get(t, "role "+migrations.ConsumerRole); code != 0 || c.Status != "warn" || c.Setting != "SLUICE_CONSUMER_PASSWORD" {
		t.Fatalf("roles without passwords: code %d, consumer's role %+v; want 0 and a warn naming SLUICE_CONSUMER_PASSWORD\n%s", code, c, r)
	}

	migrate := maps.Clone(env)
	migrate["MIGRATE_DATABASE_URL"] = db.URL
	for _, role := range migrations.Roles {
		migrate[role.PasswordEnv] = strings.ReplaceAll(role.Name, "_", "-") + "-secret-4-long"
	}
	if code, _, errOut := sluice(t, migrate, "migrate", "up"); code != 0 {
		t.Fatalf("migrate up: code %d\n%s", code, errOut)
	}
	code, r = doctor(t, env)
	for _, c := range r.Checks {
		if c.Status != "ok" {
			t.Errorf("healthy setup: %s is %s: %s", c.Check, c.Status, c.Detail)
		}
	}
	if code != 0 || !r.OK || len(r.Checks) < 15 {
		t.Fatalf("healthy setup: code %d, ok %v, %d checks; want 0, true and every check\n%s", code, r.OK, len(r.Checks), r)
	}

	for _, tc := range []struct {
		name    string
		env     map[string]string
		check   string
		setting string
		// stillOK is a check of another dependency the failure must not hide.
		stillOK string
	}{
		{"wrong NATS port", map[string]string{"NATS_URL": atHost(t, env["NATS_URL"], closedPort(t))},
			"nats", "NATS_URL", "postgres"},
		{"missing database", map[string]string{"DATABASE_URL": strings.Replace(db.URL, "/"+db.Name, "/no_such_db", 1)},
			"postgres", "DATABASE_URL", "stream INGEST"},
		{"embedder ignores the dimension", map[string]string{"EMBEDDER_MODEL": wrongDimsModel},
			"embedder", "EMBEDDER_MODEL", "vector store"},
		{"EMBEDDING_DIMS not the schema's", map[string]string{"EMBEDDING_DIMS": "32"},
			"vector store", "EMBEDDING_DIMS", "nats"},
		{"model refuses the dimensions parameter", map[string]string{"EMBEDDER_URL": refusing.URL()},
			"embedder", "EMBEDDER_SEND_DIMS", "vector store"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			broken := maps.Clone(env)
			maps.Copy(broken, tc.env)
			code, r := doctor(t, broken)
			c := r.get(t, tc.check)
			if code != 1 || r.OK || c.Status != "FAIL" || c.Setting != tc.setting || !strings.Contains(c.Detail, tc.setting) {
				t.Fatalf("code %d, check %+v; want exit 1 and %s FAIL naming %s\n%s", code, c, tc.check, tc.setting, r)
			}
			if other := r.get(t, tc.stillOK); other.Status != "ok" {
				t.Fatalf("%s hid %s: %+v\n%s", tc.check, tc.stillOK, other, r)
			}
		})
	}

	// Told not to send the parameter, the model's own vectors fit.
	unsent := maps.Clone(env)
	unsent["EMBEDDER_URL"], unsent["EMBEDDER_SEND_DIMS"] = refusing.URL(), "false"
	if code, r := doctor(t, unsent); code != 0 || r.get(t, "embedder").Status != "ok" {
		t.Fatalf("EMBEDDER_SEND_DIMS=false to a model that refuses the parameter: code %d, embedder %+v\n%s", code, r.get(t, "embedder"), r)
	}

	// Last, as it changes the server: a role that may not log in.
	if _, err := db.Pool.Exec(ctx, `ALTER ROLE `+migrations.RelayRole+` NOLOGIN`); err != nil {
		t.Fatal(err)
	}
	code, r = doctor(t, env)
	if c := r.get(t, "role "+migrations.RelayRole); code != 1 || c.Status != "FAIL" || c.Setting != "SLUICE_RELAY_PASSWORD" || !strings.Contains(c.Detail, "NOLOGIN") {
		t.Fatalf("role without LOGIN: code %d, check %+v; want exit 1 and a FAIL naming SLUICE_RELAY_PASSWORD\n%s", code, c, r)
	}
}

// Without --json each check is one line: status, name, what was found
// and what to do; skipped checks say why.
func TestDoctorPrintsOneLinePerCheck(t *testing.T) {
	t.Parallel()
	dead := closedPort(t)
	env := map[string]string{"DATABASE_URL": "postgres://sluice_operator:hunter2-secret@" + dead + "/sluice",
		"NATS_URL": "nats://" + dead, "EMBEDDER_URL": "http://" + dead, "EMBEDDER_MODEL": "a-local-model"}
	code, out, errOut := sluice(t, env, "doctor")
	if code != 1 || !strings.Contains(errOut, "checks failed") {
		t.Fatalf("everything down: code %d, stderr %q; want 1 and a count of failed checks", code, errOut)
	}
	if strings.Contains(out, "hunter2") {
		t.Fatalf("doctor printed DATABASE_URL's password:\n%s", out)
	}
	for _, want := range []string{
		"FAIL  postgres: DATABASE_URL postgres://",
		"warn  migrations: skipped: PostgreSQL unreachable",
		"FAIL  nats: NATS_URL nats://",
		"warn  stream DLQ: skipped: NATS unreachable",
		"FAIL  embedder: nothing answers at EMBEDDER_URL",
		"warn  tokenizer: no tokenizer known for EMBEDDER_MODEL a-local-model",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}
