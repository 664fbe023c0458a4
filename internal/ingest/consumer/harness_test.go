package consumer_test

import (
	"cmp"
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/sluicehq/sluice/internal/content/chunk"
	"github.com/sluicehq/sluice/internal/content/corpus"
	"github.com/sluicehq/sluice/internal/dev/embedsim"
	"github.com/sluicehq/sluice/internal/dev/testenv"
	"github.com/sluicehq/sluice/internal/ingest"
	"github.com/sluicehq/sluice/internal/ingest/consumer"
	"github.com/sluicehq/sluice/internal/ingest/pipeline"
	"github.com/sluicehq/sluice/internal/ingest/producer"
	"github.com/sluicehq/sluice/internal/platform/broker"
	"github.com/sluicehq/sluice/internal/platform/policy"
	"github.com/sluicehq/sluice/internal/provider/embedder"
	"github.com/sluicehq/sluice/pkg/classify"
	"github.com/sluicehq/sluice/pkg/vectorstore"
)

func TestMain(m *testing.M) { testenv.Main(m) }

const dims = 16

// bundle is one test's pipeline: its own database, nats-server and
// embedding simulator.
type bundle struct {
	t    *testing.T
	db   *testenv.Database
	nats *testenv.NATS
	js   jetstream.JetStream
	sim  *embedsim.Server
	reg  *prometheus.Registry
	topo broker.Topology
	// pipe is the pipeline startConsumer runs.
	pipe *pipeline.Pipeline
	// sources is the per-source policy the producers screen under.
	sources *policy.Table
}

type options struct {
	sim       embedsim.Config
	pipe      pipeline.Config
	resilient embedder.ResilientConfig
	batchSize int
	// sources is the per-source policy; nil applies pipe to every source.
	sources *policy.Table
	// ingestMaxMsgs bounds the INGEST stream, to exercise back-pressure.
	ingestMaxMsgs int64
	// ackWait is the durables' AckWait. Defaults to 30s.
	ackWait time.Duration
	// log receives the consumer's JSON log; nil discards it.
	log io.Writer
	// ledger admits the jobs of bulk-mode sources; nil embeds all live.
	ledger pipeline.Ledger
	// wrap, when set, stands between the consumer and its pipeline.
	wrap func(consumer.Processor) consumer.Processor
}

func setup(t *testing.T, o options) *bundle {
	t.Helper()
	o.sim.Dims = dims
	o.sim.RecordInputs = true
	b := &bundle{t: t, db: testenv.NewDatabase(t, testenv.WithDims(dims)), sim: embedsim.StartTest(t, o.sim),
		reg: prometheus.NewRegistry(), sources: o.sources, topo: broker.Topology{MaxDeliveries: o.pipe.MaxDeliveries, AckWait: cmp.Or(o.ackWait, 30*time.Second), IngestMaxMsgs: o.ingestMaxMsgs}}
	b.nats, b.js = testenv.NewJetStream(t, b.topo)
	return b
}

// startConsumer runs a consumer until the test ends.
func (b *bundle) startConsumer(o options) *embedder.Resilient {
	t := b.t
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	store, err := vectorstore.Open(ctx, b.db.Pool, dims)
	if err != nil {
		t.Fatal(err)
	}
	client, err := embedder.NewOpenAI(embedder.Config{URL: b.sim.URL(), Model: "embed-sim-1", Dims: dims})
	if err != nil {
		t.Fatal(err)
	}
	emb, err := embedder.NewResilient(client, o.resilient)
	if err != nil {
		t.Fatal(err)
	}
	if o.pipe.Backoff.Base == 0 {
		o.pipe.Backoff = classify.Backoff{Base: 100 * time.Millisecond, Max: 2 * time.Second, Rand: func() float64 { return 0.99 }}
	}
	log := zerolog.Nop()
	if o.log != nil {
		log = zerolog.New(o.log)
	}
	checker, err := ingest.Checker(o.sources, nil, nil, b.reg)
	if err != nil {
		t.Fatal(err)
	}
	pipe, err := pipeline.New(o.pipe, pipeline.Deps{Pool: b.db.Pool, Store: store, Embedder: emb,
		Compliance: checker, Sources: o.sources, Log: log, Metrics: pipeline.NewMetrics(b.reg), Ledger: o.ledger})
	if err != nil {
		t.Fatal(err)
	}
	b.pipe = pipe
	// The service's heartbeat: a quarter of the durables' AckWait.
	cfg := consumer.Config{BatchSize: max(o.batchSize, 1), FetchWait: 50 * time.Millisecond, AckWait: b.topo.AckWait, Heartbeat: b.topo.AckWait / 4}
	var proc consumer.Processor = pipe
	if o.wrap != nil {
		proc = o.wrap(pipe)
	}
	c := consumer.New(cfg, consumer.Deps{JS: b.js, Pipeline: proc, Gate: emb, Log: log, Registry: b.reg})
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("consumer: %v", err)
		}
	})
	return emb
}

// produce writes docs (name → content) into a directory and runs the
// producer over it.
func (b *bundle) produce(source string, docs map[string][]byte) producer.Summary {
	t := b.t
	t.Helper()
	dir := filepath.Join(t.TempDir(), "corpus")
	for name, content := range docs {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, content, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return b.produceDir(source, dir)
}

func (b *bundle) produceDir(source, dir string) producer.Summary {
	t := b.t
	t.Helper()
	r, err := corpus.NewReader(corpus.Config{Inputs: []string{dir}})
	if err != nil {
		t.Fatal(err)
	}
	cfg := producer.Config{SourceID: source, Chunk: chunk.Config{Size: 400, Overlap: 0, Unit: chunk.UnitChars},
		FullStreamWait: 50 * time.Millisecond}
	if b.sources != nil {
		cfg.Secrets.Allow = b.sources.For(source).SecretsAllow
	}
	p, err := producer.New(cfg, b.db.Pool, b.js, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	sum, err := p.Run(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	return sum
}

// waitSettled polls until no manifest row is pending, or fails the test.
func (b *bundle) waitSettled(timeout time.Duration) {
	t := b.t
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		var pending int
		if err := b.db.Pool.QueryRow(context.Background(), `SELECT count(*) FROM ingest_manifest WHERE status = 'pending'`).Scan(&pending); err != nil {
			t.Fatal(err)
		}
		if pending == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d chunks still pending after %s", pending, timeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (b *bundle) count(query string, args ...any) int {
	b.t.Helper()
	var n int
	if err := b.db.Pool.QueryRow(context.Background(), query, args...).Scan(&n); err != nil {
		b.t.Fatalf("%s: %v", query, err)
	}
	return n
}

func (b *bundle) eventually(timeout time.Duration, what string, cond func() bool) {
	b.t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			b.t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// metricValue reads a counter from the bundle's registry by name and the
// value of its first label.
func (b *bundle) metricValue(name, label string) (float64, bool) {
	families, err := b.reg.Gather()
	if err != nil {
		b.t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			if len(m.GetLabel()) > 0 && m.GetLabel()[0].GetValue() == label {
				return m.GetCounter().GetValue(), true
			}
		}
	}
	return 0, false
}
