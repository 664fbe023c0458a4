package pipeline_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/sluicehq/sluice/internal/content/chunk"
	"github.com/sluicehq/sluice/internal/content/corpus"
	"github.com/sluicehq/sluice/internal/dev/embedsim"
	"github.com/sluicehq/sluice/internal/dev/testenv"
	"github.com/sluicehq/sluice/internal/ingest/pipeline"
	"github.com/sluicehq/sluice/internal/ingest/producer"
	"github.com/sluicehq/sluice/internal/platform/broker"
	"github.com/sluicehq/sluice/internal/provider/embedder"
	"github.com/sluicehq/sluice/pkg/vectorstore"
)

func TestMain(m *testing.M) { testenv.Main(m) }

const dims = 8

// processBundle is one test's system of record, broker and embedder: the
// producer publishes into them, and the test hands the jobs it wrote to
// Process as a consumer would.
type processBundle struct {
	t     *testing.T
	db    *testenv.Database
	sim   *embedsim.Server
	store vectorstore.Store
}

func setupProcess(t *testing.T) *processBundle {
	t.Helper()
	b := &processBundle{t: t, db: testenv.NewDatabase(t, testenv.WithDims(dims)),
		sim: embedsim.StartTest(t, embedsim.Config{Dims: dims, RecordInputs: true})}
	store, err := vectorstore.Open(context.Background(), b.db.Pool, dims)
	if err != nil {
		t.Fatal(err)
	}
	b.store = store
	return b
}

// produce runs the producer over docs (name → content), as source.
func (b *processBundle) produce(source string, docs map[string]string) {
	t := b.t
	t.Helper()
	dir := t.TempDir()
	for name, content := range docs {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_, js := testenv.NewJetStream(t, broker.Topology{})
	r, err := corpus.NewReader(corpus.Config{Inputs: []string{dir}})
	if err != nil {
		t.Fatal(err)
	}
	p, err := producer.New(producer.Config{SourceID: source, Chunk: chunk.Config{Size: 400, Unit: chunk.UnitChars}}, b.db.Pool, js, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Run(context.Background(), r); err != nil {
		t.Fatal(err)
	}
}

// jobs returns the producer's pending jobs, in key order, each at the
// given delivery.
func (b *processBundle) jobs(delivered int) []*pipeline.Job {
	b.t.Helper()
	rows, err := b.db.Pool.Query(context.Background(), `SELECT job FROM ingest_manifest WHERE status = 'pending' ORDER BY doc_id, chunk_index`)
	if err != nil {
		b.t.Fatal(err)
	}
	defer rows.Close()
	var jobs []*pipeline.Job
	for rows.Next() {
		var raw []byte
		if err := rows.Scan(&raw); err != nil {
			b.t.Fatal(err)
		}
		jobs = append(jobs, &pipeline.Job{Raw: raw, Delivered: delivered})
	}
	if err := rows.Err(); err != nil {
		b.t.Fatal(err)
	}
	return jobs
}

// client is an embedder client of the bundle's embed-sim.
func (b *processBundle) client() *embedder.OpenAI {
	b.t.Helper()
	c, err := embedder.NewOpenAI(embedder.Config{URL: b.sim.URL(), Model: "embed-sim-1", Dims: dims})
	if err != nil {
		b.t.Fatal(err)
	}
	return c
}

func (b *processBundle) pipeline(emb pipeline.Embedder) *pipeline.Pipeline {
	b.t.Helper()
	p, err := pipeline.New(pipeline.Config{}, pipeline.Deps{Pool: b.db.Pool, Store: b.store, Embedder: emb, Log: zerolog.Nop()})
	if err != nil {
		b.t.Fatal(err)
	}
	return p
}

func (b *processBundle) process(p *pipeline.Pipeline, jobs []*pipeline.Job) {
	b.t.Helper()
	if err := p.Process(context.Background(), jobs); err != nil {
		b.t.Fatalf("process: %v", err)
	}
}

func (b *processBundle) count(query string, args ...any) int {
	b.t.Helper()
	var n int
	if err := b.db.Pool.QueryRow(context.Background(), query, args...).Scan(&n); err != nil {
		b.t.Fatalf("%s: %v", query, err)
	}
	return n
}

// checkParkedAtStore checks that the one job whose text holds marker was
// parked by the store stage under class, with its dead letter in the
// outbox, and that every other job was stored.
func (b *processBundle) checkParkedAtStore(jobs []*pipeline.Job, marker, class string) {
	t := b.t
	t.Helper()
	var bad *pipeline.Job
	for _, j := range jobs {
		if strings.Contains(j.Chunk().Text, marker) {
			bad = j
			continue
		}
		if j.Outcome != pipeline.Stored {
			t.Errorf("%s: outcome %v (failure %+v), want stored", j.Chunk().DocID, j.Outcome, j.Failure)
		}
	}
	if bad == nil {
		t.Fatalf("no job holds %q", marker)
	}
	if bad.Outcome != pipeline.Parked || bad.Failure == nil || bad.Failure.Stage != pipeline.StageStore || bad.Failure.ParkedClass != class {
		t.Fatalf("rejected job: outcome %v, failure %+v; want parked at stage store as %s", bad.Outcome, bad.Failure, class)
	}
	docID := bad.Chunk().DocID
	if n := b.count(`SELECT count(*) FROM chunk_embeddings`); n != len(jobs)-1 {
		t.Errorf("%d vectors stored, want the %d the store accepted", n, len(jobs)-1)
	}
	if n := b.count(`SELECT count(*) FROM chunk_embeddings WHERE doc_id = $1`, docID); n != 0 {
		t.Errorf("the rejected chunk has %d vectors", n)
	}
	if n := b.count(`SELECT count(*) FROM ingest_manifest WHERE status = 'stored'`); n != len(jobs)-1 {
		t.Errorf("%d manifest rows stored, want %d", n, len(jobs)-1)
	}
	if n := b.count(`SELECT count(*) FROM ingest_manifest WHERE doc_id = $1 AND status = 'parked' AND last_error_class = $2 AND attempts = 1`, docID, class); n != 1 {
		t.Errorf("the rejected chunk's manifest row is not parked as %s after one attempt", class)
	}
	if n := b.count(`SELECT count(*) FROM documents WHERE doc_id = $1 AND status = 'failed'`, docID); n != 1 {
		t.Error("the rejected chunk's document is not failed")
	}
	if n := b.count(`SELECT count(*) FROM outbox`); n != 1 {
		t.Errorf("%d outbox rows, want the rejected chunk's one", n)
	}
	if n := b.count(`SELECT count(*) FROM outbox WHERE payload->>'doc_id' = $1 AND payload->>'stage' = 'store'
		AND payload->>'error_class' = $2 AND payload->>'disposition' = 'quarantine' AND subject LIKE 'dlq.quarantine.%'`, docID, class); n != 1 {
		t.Errorf("no quarantine dead letter for the rejected chunk at stage store as %s", class)
	}
}

// A record PostgreSQL refuses — here a CHECK violation raised for one
// chunk by a trigger — is parked alone, at stage store, as
// constraint_violation, with its dead letter; the rest of its batch is
// stored in the same Process.
func TestStoreRejectionParksOnlyTheRejectedRecord(t *testing.T) {
	t.Parallel()
	b := setupProcess(t)
	const marker = "refused by the store"
	b.produce("rejects", map[string]string{
		"a.txt": "a chunk the store accepts", "b.txt": "a chunk " + marker,
		"c.txt": "another chunk the store accepts", "d.txt": "a fourth chunk",
	})
	if _, err := b.db.Pool.Exec(context.Background(), `
		CREATE FUNCTION refuse_marked() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			IF NEW.text LIKE '%`+marker+`%' THEN
				RAISE EXCEPTION 'chunk refused' USING ERRCODE = 'check_violation';
			END IF;
			RETURN NEW;
		END $$;
		CREATE TRIGGER refuse_marked BEFORE INSERT OR UPDATE ON chunk_embeddings
			FOR EACH ROW EXECUTE FUNCTION refuse_marked();`); err != nil {
		t.Fatal(err)
	}
	jobs := b.jobs(1)
	if len(jobs) != 4 {
		t.Fatalf("%d jobs, want 4", len(jobs))
	}
	b.process(b.pipeline(b.client()), jobs)
	b.checkParkedAtStore(jobs, marker, "constraint_violation")
}

// shortVectors hands back, for each input holding marker, a vector one
// dimension short: an embedder that does not check what it returns.
type shortVectors struct {
	pipeline.Embedder
	marker string
}

func (e shortVectors) Embed(ctx context.Context, inputs []string) ([][]float32, error) {
	vecs, err := e.Embedder.Embed(ctx, inputs)
	for i, in := range inputs {
		if err == nil && strings.Contains(in, e.marker) {
			vecs[i] = vecs[i][1:]
		}
	}
	return vecs, err
}

// A record the store's own validation rejects (a *vectorstore.RecordError)
// is parked alone, at stage store, under the class the store gave it, and
// the rest of its batch is stored.
func TestStoreRecordErrorParksOnlyThatRecord(t *testing.T) {
	t.Parallel()
	b := setupProcess(t)
	const marker = "short vector"
	b.produce("records", map[string]string{
		"a.txt": "a chunk with a whole vector", "b.txt": "a chunk with a " + marker, "c.txt": "one more whole one",
	})
	jobs := b.jobs(1)
	b.process(b.pipeline(shortVectors{Embedder: b.client(), marker: marker}), jobs)
	b.checkParkedAtStore(jobs, marker, "dimension_mismatch")
}

// A live job whose last allowed delivery meets the embedder's open breaker
// goes back without spending that delivery: no request carried it, so it
// is held, and its next delivery, which JetStream counts one higher, is
// still within the cap and stores it.
func TestOpenBreakerHoldsALiveJobAtItsLastDelivery(t *testing.T) {
	t.Parallel()
	b := setupProcess(t)
	const text = "a chunk on its last delivery"
	b.produce("held", map[string]string{"a.txt": text})
	down, err := embedder.NewResilient(b.client(), embedder.ResilientConfig{MaxRetries: -1, FailureThreshold: 1, BreakerDelay: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	b.sim.SetOutage(time.Now().Add(-time.Minute), time.Now().Add(time.Hour))
	if _, err := down.Embed(context.Background(), []string{"opens the breaker"}); err == nil {
		t.Fatal("embed during the outage succeeded")
	}
	if s := down.State(); s != embedder.BreakerOpen {
		t.Fatalf("breaker %v, want open", s)
	}
	b.sim.SetOutage(time.Time{}, time.Time{})

	last := pipeline.DefaultMaxDeliveries
	jobs := b.jobs(last)
	b.process(b.pipeline(down), jobs)
	if j := jobs[0]; j.Outcome != pipeline.Retry || j.Failure == nil || j.Failure.Decision.Class != "circuit_open" {
		t.Fatalf("outcome %v, failure %+v; want a retry for circuit_open", j.Outcome, j.Failure)
	}
	if b.sim.Seen(text) {
		t.Fatal("the open breaker let the chunk through")
	}
	if n := b.count(`SELECT count(*) FROM ingest_manifest WHERE status = 'pending' AND held_deliveries = 1`); n != 1 {
		t.Fatal("the refused delivery is not counted as held")
	}

	// The redelivery: JetStream counts one more delivery than the cap.
	jobs = b.jobs(last + 1)
	b.process(b.pipeline(b.client()), jobs)
	if j := jobs[0]; j.Outcome != pipeline.Stored {
		t.Fatalf("redelivery: outcome %v, failure %+v; want stored", j.Outcome, j.Failure)
	}
	if n := b.count(`SELECT attempts FROM ingest_manifest`); n != last {
		t.Errorf("stored after %d attempts, want %d: the held delivery was charged", n, last)
	}
	if n := b.count(`SELECT count(*) FROM outbox`); n != 0 {
		t.Errorf("%d dead letters", n)
	}
}
