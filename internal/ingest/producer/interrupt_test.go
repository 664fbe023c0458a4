package producer_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/dev/embedsim"
	"github.com/sluicehq/sluice/internal/dev/localenv"
	"github.com/sluicehq/sluice/internal/dev/testenv"
	"github.com/sluicehq/sluice/internal/failure/dlq"
	"github.com/sluicehq/sluice/internal/failure/outboxrelay"
	"github.com/sluicehq/sluice/internal/ingest/consumer"
	"github.com/sluicehq/sluice/internal/platform/broker"
	"github.com/sluicehq/sluice/internal/platform/natsauth"
	"github.com/sluicehq/sluice/internal/store/runs"
	"github.com/sluicehq/sluice/migrations"
)

func TestMain(m *testing.M) { testenv.Main(m) }

const dims = 16

// The interrupt test's corpus and limits: the stream takes perSource jobs
// of the source, so the producer, one chunk a document and batchDocs
// documents a batch, is held mid-publish on its third batch until the
// consumers drain the stream.
const (
	corpusDocs = 100
	batchDocs  = 10
	perSource  = 20
)

// A producer killed with SIGKILL mid-publish leaves its run running; once
// its chunks have settled and its heartbeat is older than its timeout,
// the housekeeping of the dlq-replayer ends it interrupted, with what it
// had published, and a run of the same source again completes the rest.
func TestAKilledProducersRunEndsInterrupted(t *testing.T) {
	t.Parallel()
	b := newInterruptBundle(t)
	corpus := writeCorpus(t, corpusDocs)

	killed := b.startProducer(corpus)
	b.eventually(30*time.Second, "the producer to be held mid-publish on a full stream, its heartbeat recording 20 chunks published", func() bool {
		return b.count(`SELECT count(*) FROM ingest_manifest`) >= 3*batchDocs &&
			b.count(`SELECT count(*) FROM ingest_runs WHERE published = $1`, perSource) == 1
	})
	if err := killed.Kill(); err != nil {
		t.Fatal(err)
	}
	<-killed.Exited()
	var runID string
	if err := b.db.Pool.QueryRow(context.Background(), `SELECT run_id FROM ingest_runs`).Scan(&runID); err != nil {
		t.Fatal(err)
	}
	if st, _, err := runs.Get(context.Background(), b.db.Pool, runID); err != nil || st != runs.Running {
		t.Fatalf("killed run is %s (%v), want running until its chunks settle", st, err)
	}

	b.startServices()
	b.eventually(30*time.Second, "the killed producer's run to end interrupted", func() bool {
		st, _, err := runs.Get(context.Background(), b.db.Pool, runID)
		return err == nil && st == runs.Interrupted
	})
	var published, documents, stored, pending int
	var finished bool
	var reason string
	if err := b.db.Pool.QueryRow(context.Background(), `
		SELECT published, documents, stored, finished_at IS NOT NULL, halted_reason,
		       (SELECT count(*) FROM ingest_manifest WHERE run_id = $1 AND status = 'pending')
		FROM ingest_runs WHERE run_id = $1`, runID).Scan(&published, &documents, &stored, &finished, &reason, &pending); err != nil {
		t.Fatal(err)
	}
	recorded := b.count(`SELECT count(*) FROM ingest_manifest WHERE run_id = $1`, runID)
	if published != perSource || documents != 3*batchDocs || stored != recorded || pending != 0 || !finished {
		t.Errorf("interrupted run: published %d, documents %d, stored %d of %d recorded, %d pending, finished %v; want %d published, %d documents, all stored, finished",
			published, documents, stored, recorded, pending, finished, perSource, 3*batchDocs)
	}
	if !strings.Contains(reason, fmt.Sprintf("having published %d chunks", perSource)) {
		t.Errorf("interrupted run's reason %q does not say what it published", reason)
	}

	b.finish(b.startProducer(corpus), 40*time.Second)
	b.eventually(30*time.Second, "the second run to complete", func() bool {
		return b.count(`SELECT count(*) FROM ingest_runs WHERE run_id <> $1 AND status = 'completed' AND finished_at IS NOT NULL`, runID) == 1
	})
	if n := b.count(`SELECT count(*) FROM chunk_embeddings`); n != corpusDocs {
		t.Errorf("%d chunks stored, want %d", n, corpusDocs)
	}
	if n := b.count(`SELECT count(*) FROM documents WHERE status = 'ready'`); n != corpusDocs {
		t.Errorf("%d documents ready, want %d", n, corpusDocs)
	}
	if st, _, err := runs.Get(context.Background(), b.db.Pool, runID); err != nil || st != runs.Interrupted {
		t.Errorf("after the second run the killed run is %s (%v), want interrupted", st, err)
	}
}

// interruptBundle is a database, NATS, embed-sim, the producer binary,
// and the services as the test starts them.
type interruptBundle struct {
	t    *testing.T
	db   *testenv.Database
	nats *testenv.NATS
	sim  *embedsim.Server
	bin  string
	dir  string
	logs map[string]*testenv.Buffer
	// producers are the producer processes started, in order.
	producers []*localenv.Process
}

func newInterruptBundle(t *testing.T) *interruptBundle {
	t.Helper()
	b := &interruptBundle{t: t, db: testenv.NewDatabase(t, testenv.WithDims(dims)), sim: embedsim.StartTest(t, embedsim.Config{Dims: dims}),
		bin: buildProducer(t), dir: t.TempDir(), logs: map[string]*testenv.Buffer{}}
	b.nats, _ = testenv.NewJetStream(t, broker.Topology{IngestMaxPerSource: perSource})
	t.Cleanup(func() {
		if t.Failed() {
			for name, log := range b.logs {
				t.Logf("--- %s log:\n%s", name, log.String())
			}
			for i, p := range b.producers {
				t.Logf("--- producer %d log:\n%s", i, p.LogTail(3000))
			}
		}
	})
	return b
}

// buildProducer builds cmd/producer: the test needs a real process to die.
func buildProducer(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "producer")
	out, err := exec.Command("go", "build", "-o", path, "github.com/sluicehq/sluice/cmd/producer").CombinedOutput()
	if err != nil {
		t.Fatalf("go build cmd/producer: %v\n%s", err, out)
	}
	return path
}

// startProducer starts a producer process over corpus, beating every
// 100ms and taken for gone after 1s of silence.
func (b *interruptBundle) startProducer(corpus string) *localenv.Process {
	b.t.Helper()
	return b.startProducerWith([]string{"--source", "docs", corpus})
}

// startProducerWith starts the producer with args, and env besides the
// bundle's.
func (b *interruptBundle) startProducerWith(args []string, env ...string) *localenv.Process {
	b.t.Helper()
	env = append(append(b.nats.Env(natsauth.Producer), "DATABASE_URL="+b.db.RoleURL(migrations.ProducerRole), "METRICS_ADDR=", "LOG_FORMAT=json", "LOG_LEVEL=warn",
		"CHUNK_UNIT=chars", "CHUNK_SIZE=400", "CHUNK_OVERLAP=0", fmt.Sprintf("PRODUCER_BATCH_DOCS=%d", batchDocs),
		"RUN_HEARTBEAT_INTERVAL=100ms", "RUN_HEARTBEAT_TIMEOUT=1s"), env...)
	log := filepath.Join(b.dir, fmt.Sprintf("producer-%d.log", len(b.producers)))
	p, err := localenv.Start(localenv.Command{Name: "producer", Path: b.bin, Args: args, Env: env, Log: log})
	if err != nil {
		b.t.Fatal(err)
	}
	b.producers = append(b.producers, p)
	b.t.Cleanup(func() { _ = p.Kill() })
	return p
}

// finish waits up to timeout for the producer p to exit, and fails the
// test unless it succeeded.
func (b *interruptBundle) finish(p *localenv.Process, timeout time.Duration) {
	b.t.Helper()
	select {
	case <-p.Exited():
	case <-time.After(timeout):
		b.t.Fatalf("the producer's run did not finish:\n%s", p.LogTail(3000))
	}
	if err := p.Wait(); err != nil {
		b.t.Fatalf("the producer's run: %v\n%s", err, p.LogTail(3000))
	}
}

// startServices runs, in process, a consumer, the outbox relay with its
// owed-work sweeper, and the dlq-replayer's triage with its housekeeping,
// which settles runs, each at test speed, until the test ends.
func (b *interruptBundle) startServices() {
	common := map[string]string{"METRICS_ADDR": "", "LOG_FORMAT": "json", "LOG_LEVEL": "warn",
		"EMBEDDER_URL": b.sim.URL(), "EMBEDDING_DIMS": fmt.Sprint(dims)}
	b.serve("consumer", natsauth.Consumer, consumer.Run, common, map[string]string{"FETCH_WAIT": "50ms"})
	b.serve("outbox-relay", natsauth.Relay, outboxrelay.Run, common, map[string]string{"OWED_GRACE": "500ms", "OWED_INTERVAL": "200ms"})
	b.serve("dlq-replayer", natsauth.Replayer, dlq.Run, common, map[string]string{"DLQ_ROLES": "triage", "HOUSEKEEPING_INTERVAL": "200ms"})
}

// serve runs a service's Run as role, and as its own PostgreSQL role,
// until the test ends.
func (b *interruptBundle) serve(name string, role natsauth.Role, run func(context.Context, []string, func(string) (string, bool), io.Writer) error, envs ...map[string]string) {
	env := map[string]string{}
	for _, e := range envs {
		for k, v := range e {
			env[k] = v
		}
	}
	for _, kv := range b.nats.Env(role) {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	pgRole, err := migrations.RoleForBinary(name)
	if err != nil {
		b.t.Fatal(err)
	}
	env["DATABASE_URL"] = b.db.RoleURL(pgRole)
	log := &testenv.Buffer{}
	b.logs[name] = log
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := run(ctx, nil, func(k string) (string, bool) { v, ok := env[k]; return v, ok }, log); err != nil && ctx.Err() == nil {
			b.t.Errorf("%s: %v", name, err)
		}
	})
	b.t.Cleanup(func() {
		cancel()
		wg.Wait()
	})
}

func (b *interruptBundle) count(query string, args ...any) int {
	b.t.Helper()
	var n int
	if err := b.db.Pool.QueryRow(context.Background(), query, args...).Scan(&n); err != nil {
		b.t.Fatalf("%s: %v", query, err)
	}
	return n
}

func (b *interruptBundle) eventually(timeout time.Duration, what string, cond func() bool) {
	b.t.Helper()
	testenv.Eventually(b.t, timeout, what, cond)
}

// writeCorpus writes n documents of one chunk each.
func writeCorpus(t *testing.T, n int) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "corpus")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		text := fmt.Sprintf("document %d about rivers, gates and the water between them", i)
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("d%03d.txt", i)), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}
