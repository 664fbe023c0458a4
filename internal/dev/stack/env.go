package stack

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/sluicehq/sluice/internal/dev/localenv"
	"github.com/sluicehq/sluice/internal/platform/natsauth"
	"github.com/sluicehq/sluice/migrations"
)

// database is the stack's database name.
const database = "sluice"

// client is one program that connects to the stack, with the environment
// file that carries its credentials.
type client struct {
	// name is the environment file's name, without .env.
	name string
	// natsRole and pgRole are its NATS user and PostgreSQL role.
	natsRole natsauth.Role
	pgRole   string
}

// clients are every program that connects to a stack: the producer and
// the operator CLI that users run, the console, and the services the stack
// runs.
var clients = []client{
	{"producer", natsauth.Producer, migrations.ProducerRole},
	{"sluice", natsauth.Operator, migrations.OperatorRole},
	{"console", natsauth.Console, migrations.ConsoleRole},
	{"consumer", natsauth.Consumer, migrations.ConsumerRole},
	{"outbox-relay", natsauth.Relay, migrations.RelayRole},
	{"dlq-replayer", natsauth.Replayer, migrations.ReplayerRole},
}

// ownerURL connects to the stack's database as its owner, the superuser.
func (st *state) ownerURL() string { return localenv.PostgresURL(st.PostgresPort, database) }

// natsBase is the NATS client URL without credentials.
func (st *state) natsBase() string { return fmt.Sprintf("nats://127.0.0.1:%d", st.NATSPort) }

// natsURL is the NATS URL carrying role's credentials.
func (st *state) natsURL(role natsauth.Role) string {
	return natsauth.URLWithUser(st.natsBase(), string(role), st.Passwords[role])
}

// embedderURL is the URL the services embed with.
func (st *state) embedderURL() string {
	if st.Embedder.simulated() {
		return fmt.Sprintf("http://127.0.0.1:%d", st.SimPort)
	}
	return st.Embedder.URL
}

// env is c's environment, as NAME=value pairs in a stable order.
func (st *state) env(c client, apiKey string) []string {
	env := []string{
		"DATABASE_URL=" + localenv.AsRole(st.ownerURL(), c.pgRole),
		"NATS_URL=" + st.natsURL(c.natsRole),
		"EMBEDDER_URL=" + st.embedderURL(),
		"EMBEDDER_MODEL=" + st.Embedder.Model,
		fmt.Sprintf("EMBEDDING_DIMS=%d", st.Embedder.Dims),
	}
	if st.Embedder.Encoding != "" {
		env = append(env, "EMBEDDER_ENCODING="+st.Embedder.Encoding)
	}
	if st.Embedder.NoDims {
		env = append(env, "EMBEDDER_SEND_DIMS=false")
	}
	if apiKey != "" {
		env = append(env, "EMBEDDER_API_KEY="+apiKey)
	}
	if port, ok := st.MetricsPorts[c.name]; ok {
		env = append(env, fmt.Sprintf("METRICS_ADDR=127.0.0.1:%d", port))
	}
	return env
}

// envFile is where c's environment is written under dir.
func envFile(dir string, c client) string { return filepath.Join(dir, "env", c.name+".env") }

// writeEnvFiles writes every client's environment as a file of export
// lines that a shell sources, readable by its owner only.
func (st *state) writeEnvFiles(dir, apiKey string) error {
	if err := os.MkdirAll(filepath.Join(dir, "env"), 0o700); err != nil {
		return err
	}
	for _, c := range clients {
		var b strings.Builder
		fmt.Fprintf(&b, "# %s's environment for the Sluice stack in %s: its own PostgreSQL role and NATS user.\n", c.name, dir)
		for _, kv := range st.env(c, apiKey) {
			k, v, _ := strings.Cut(kv, "=")
			fmt.Fprintf(&b, "export %s='%s'\n", k, strings.ReplaceAll(v, "'", `'\''`))
		}
		if err := os.WriteFile(envFile(dir, c), []byte(b.String()), 0o600); err != nil {
			return err
		}
	}
	return nil
}

// clientNamed is the client called name.
func clientNamed(name string) client {
	for _, c := range clients {
		if c.name == name {
			return c
		}
	}
	panic("stack: no client " + name)
}
