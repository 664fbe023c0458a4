package systemtest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/sluicehq/sluice/internal/content/chunk"
	"github.com/sluicehq/sluice/internal/content/compliance"
	"github.com/sluicehq/sluice/internal/content/corpus"
	"github.com/sluicehq/sluice/internal/dev/embedsim"
	"github.com/sluicehq/sluice/internal/dev/localenv"
	"github.com/sluicehq/sluice/internal/dev/testenv"
	"github.com/sluicehq/sluice/internal/failure/dlq"
	"github.com/sluicehq/sluice/internal/ingest/consumer"
	"github.com/sluicehq/sluice/internal/ingest/pipeline"
	"github.com/sluicehq/sluice/internal/ingest/producer"
	"github.com/sluicehq/sluice/internal/ops/cli"
	"github.com/sluicehq/sluice/internal/platform/broker"
	"github.com/sluicehq/sluice/internal/platform/natsauth"
	"github.com/sluicehq/sluice/internal/provider/embedder"
	"github.com/sluicehq/sluice/migrations"
	"github.com/sluicehq/sluice/pkg/classify"
	"github.com/sluicehq/sluice/pkg/outbox"
	"github.com/sluicehq/sluice/pkg/vectorstore"
)

func TestMain(m *testing.M) { testenv.Main(m) }

const dims = 16

// system is one test's whole deployment, all in process.
type system struct {
	t    *testing.T
	db   *testenv.Database
	nats *testenv.NATS
	js   jetstream.JetStream
	sim  *embedsim.Server
	pipe pipeline.Config
}

// newSystem deploys the system on a fresh database of backend, on a NATS
// server adjusted by natsOpts.
func newSystem(t *testing.T, backend testenv.Backend, sim embedsim.Config, pipe pipeline.Config, natsOpts ...testenv.NATSOption) *system {
	t.Helper()
	sim.Dims = dims
	s := &system{t: t, db: testenv.NewDatabase(t, testenv.WithDims(dims), testenv.OnBackend(backend)), sim: embedsim.StartTest(t, sim),
		nats: testenv.NewNATS(t, natsOpts...), pipe: pipe}
	s.js = s.connect(natsauth.Owner)
	if err := broker.Ensure(context.Background(), s.js, s.topology()); err != nil {
		t.Fatal(err)
	}
	return s
}

// connect opens a connection as role, closed when the test ends: each
// in-process service uses its own role's, as its binary would.
func (s *system) connect(role natsauth.Role) jetstream.JetStream {
	s.t.Helper()
	nc, js, err := broker.Connect(s.nats.ConnConfig(role, s.t.Name()+"-"+string(role)), zerolog.Nop())
	if err != nil {
		s.t.Fatal(err)
	}
	s.t.Cleanup(nc.Close)
	return js
}

func (s *system) topology() broker.Topology {
	deliveries := s.pipe.MaxDeliveries
	if deliveries == 0 {
		deliveries = 5
	}
	return broker.Topology{MaxDeliveries: deliveries, AckWait: 30 * time.Second}
}

// background runs fn until the test ends.
func (s *system) background(name string, fn func(ctx context.Context) error) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- fn(ctx) }()
	s.t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			s.t.Errorf("%s: %v", name, err)
		}
	})
}

// pipeline is the ingest path as role runs it: the consumer's, or the
// replayer's.
func (s *system) pipeline(resilient embedder.ResilientConfig, role string) (*pipeline.Pipeline, *embedder.Resilient) {
	t := s.t
	pool := s.db.RolePool(t, role)
	store, err := vectorstore.Open(context.Background(), pool, dims)
	if err != nil {
		t.Fatal(err)
	}
	client, err := embedder.NewOpenAI(embedder.Config{URL: s.sim.URL(), Model: "embed-sim-1", Dims: dims})
	if err != nil {
		t.Fatal(err)
	}
	emb, err := embedder.NewResilient(client, resilient)
	if err != nil {
		t.Fatal(err)
	}
	cfg := s.pipe
	if cfg.Backoff.Base == 0 {
		cfg.Backoff = classify.Backoff{Base: 50 * time.Millisecond, Max: 500 * time.Millisecond}
	}
	pipe, err := pipeline.New(cfg, pipeline.Deps{Pool: pool, Store: store, Embedder: emb,
		Compliance: compliance.NewChecker(compliance.DefaultRules(), nil), Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	return pipe, emb
}

// startAll runs a consumer, the outbox relay, and the triage and replayer
// DLQ consumers, each as its own NATS user and PostgreSQL role.
func (s *system) startAll(resilient embedder.ResilientConfig) {
	pipe, emb := s.pipeline(resilient, migrations.ConsumerRole)
	c := consumer.New(consumer.Config{BatchSize: 16, FetchWait: 50 * time.Millisecond}, consumer.Deps{JS: s.connect(natsauth.Consumer), Pipeline: pipe, Gate: emb, Log: zerolog.Nop()})
	s.background("consumer", c.Run)
	relay := outbox.NewRelay(outbox.RelayConfig{PollInterval: 100 * time.Millisecond}, outbox.RelayDeps{Pool: s.db.RolePool(s.t, migrations.RelayRole), JS: s.connect(natsauth.Relay), Log: zerolog.Nop()})
	s.background("relay", relay.Run)
	replayerJS := s.connect(natsauth.Replayer)
	replayerPool := s.db.RolePool(s.t, migrations.ReplayerRole)
	triage := dlq.NewTriage(dlq.TriageConfig{}, dlq.TriageDeps{Pool: replayerPool, Log: zerolog.Nop()})
	s.background("triage", func(ctx context.Context) error {
		return dlq.Consume(ctx, replayerJS, broker.TriageConsumer, zerolog.Nop(), dlq.WithPayloads(replayerPool, triage.Handle))
	})
	replayPipe, _ := s.pipeline(resilient, migrations.ReplayerRole)
	replayer := dlq.NewReplayer(replayPipe, s.topology().MaxDeliveries, zerolog.Nop(), prometheus.NewRegistry(), nil)
	s.background("replayer", func(ctx context.Context) error {
		return dlq.Consume(ctx, replayerJS, broker.ReplayerConsumer, zerolog.Nop(), dlq.WithPayloads(replayerPool, replayer.Handle))
	})
}

func (s *system) produce(source string, docs map[string]string) producer.Summary {
	t := s.t
	dir := filepath.Join(t.TempDir(), "corpus")
	for name, content := range docs {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return s.runProducer(producer.Config{SourceID: source}, dir)
}

// runProducer runs a producer of cfg, chunking by 400 characters, over
// input.
func (s *system) runProducer(cfg producer.Config, input string) producer.Summary {
	t := s.t
	r, err := corpus.NewReader(corpus.Config{Inputs: []string{input}})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Chunk = chunk.Config{Size: 400, Unit: chunk.UnitChars}
	p, err := producer.New(cfg, s.db.RolePool(t, migrations.ProducerRole), s.connect(natsauth.Producer), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	sum, err := p.Run(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	return sum
}

func docs(prefix string, n int) map[string]string {
	out := map[string]string{}
	for i := range n {
		out[fmt.Sprintf("%s%03d.txt", prefix, i)] = fmt.Sprintf("%s document number %d about rivers and gates", prefix, i)
	}
	return out
}

// eventually polls cond until it holds or the timeout passes.
func (s *system) eventually(timeout time.Duration, what string, cond func() bool) {
	s.t.Helper()
	if !localenv.Poll(timeout, cond) {
		s.t.Fatalf("timed out after %s waiting for %s; chunks by status: %s", timeout, what, s.statuses())
	}
}

// statuses summarises the manifest, for a failed wait's message.
func (s *system) statuses() string {
	rows, err := s.db.Pool.Query(context.Background(), `SELECT status, attempts, coalesce(last_error_class, ''), count(*)
		FROM ingest_manifest GROUP BY 1, 2, 3 ORDER BY 1, 2, 3`)
	if err != nil {
		return err.Error()
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var status, class string
		var attempts, n int
		if err := rows.Scan(&status, &attempts, &class, &n); err != nil {
			return err.Error()
		}
		out = append(out, fmt.Sprintf("%d %s (attempts %d, class %q)", n, status, attempts, class))
	}
	return strings.Join(out, ", ")
}

func (s *system) count(query string, args ...any) int {
	s.t.Helper()
	var n int
	if err := s.db.Pool.QueryRow(context.Background(), query, args...).Scan(&n); err != nil {
		s.t.Fatalf("%s: %v", query, err)
	}
	return n
}

// sluice runs the operator CLI against this system, as the operator.
func (s *system) sluice(args ...string) (int, string, string) {
	return s.sluiceAs(natsauth.Operator, args...)
}

// sluiceAs runs the operator CLI with role's NATS credentials (and TLS
// files, when the server requires TLS), connected to PostgreSQL as
// sluice_operator, the CLI's role.
func (s *system) sluiceAs(role natsauth.Role, args ...string) (int, string, string) {
	return s.sluiceWith(context.Background(), s.cliEnv(role), args...)
}

// cliEnv is the environment of a command run against this system: role's
// NATS credentials (and TLS files), PostgreSQL as sluice_operator, and
// the system's embed-sim as the embedder.
func (s *system) cliEnv(role natsauth.Role) map[string]string {
	env := map[string]string{"DATABASE_URL": s.db.RoleURL(migrations.OperatorRole), "USER": "ops",
		"EMBEDDER_URL": s.sim.URL(), "EMBEDDING_DIMS": fmt.Sprint(dims)}
	for _, kv := range s.nats.Env(role) {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	return env
}

// sluiceWith runs the operator CLI with exactly the environment env.
func (s *system) sluiceWith(ctx context.Context, env map[string]string, args ...string) (int, string, string) {
	var stdout, stderr bytes.Buffer
	code := cli.Run(ctx, cli.Env{Stdout: &stdout, Stderr: &stderr,
		Lookup: func(k string) (string, bool) { v, ok := env[k]; return v, ok }}, args)
	return code, stdout.String(), stderr.String()
}
