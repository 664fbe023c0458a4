package chaos_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/sluicehq/sluice/internal/platform/broker"
)

// largeModel is the later generation's model: embed-sim answers any.
const largeModel = "embed-sim-large"

// sqlExec runs a statement that injects a fault.
func (f *fleet) sqlExec(query string, args ...any) {
	f.t.Helper()
	if _, err := f.db.Pool.Exec(context.Background(), query, args...); err != nil {
		f.t.Fatalf("%s: %v", query, err)
	}
}

// strandOne leaves one INGEST message that no durable will deliver again,
// the way a server-side MaxDeliver does: the workers durable is capped at
// one delivery and the message is delivered once and not acknowledged.
func (f *fleet) strandOne() {
	f.t.Helper()
	ctx := context.Background()
	cfg, err := broker.Topology{}.ConsumerConfig(broker.WorkersConsumer)
	if err != nil {
		f.t.Fatal(err)
	}
	cfg.MaxDeliver = 1
	cfg.AckWait = time.Second
	cons, err := f.js.UpdateConsumer(ctx, broker.IngestStream, cfg)
	if err != nil {
		f.t.Fatal(err)
	}
	batch, err := cons.Fetch(1, jetstream.FetchMaxWait(5*time.Second))
	if err != nil {
		f.t.Fatal(err)
	}
	n := 0
	for range batch.Messages() {
		n++ // delivered, never acknowledged
	}
	if n != 1 {
		f.t.Fatalf("fetched %d messages to strand, want 1", n)
	}
}

// Each fault reconcile knows of, injected into a quiet system (a later
// index generation included), makes it exit 1 naming the problem; --redrive repairs each one, and once the
// services have done the re-driven work (and the producer has run again
// over the source of the chunk that lost its vector: its job was cleared
// when it was stored) the system converges and reconcile exits 0.
func TestReconcileFindsAndRepairsInjectedFaults(t *testing.T) {
	t.Parallel()
	f := newFleet(t, fleetOptions{})
	f.services()
	recDir := f.writeCorpus("rec", 12, 30)
	f.runProducer("rec", recDir)
	f.converge(2*time.Minute, 12)
	if code, out := f.sluice("index", "create", "--model", largeModel, "--dims", "32", "--reason", "a later generation to strand a chunk of", "--execute"); code != 0 {
		t.Fatalf("index create exited %d:\n%s", code, out)
	}
	f.eventually(time.Minute, "generation 2 to become ready", func() bool { return f.generationStatus(2) == "ready" })
	f.stopServices()

	// A leak: a stored chunk loses its vector.
	f.sqlExec(`DELETE FROM chunk_embeddings WHERE (doc_id, chunk_index) IN (SELECT doc_id, chunk_index FROM chunk_embeddings LIMIT 1)`)
	// A later generation that lost a vector of a chunk stored long ago,
	// with nothing queued or in flight to bring it back.
	f.sqlExec(`DELETE FROM generation_embeddings WHERE generation = 2 AND (doc_id, chunk_index) IN (
		SELECT doc_id, chunk_index FROM generation_embeddings WHERE generation = 2 ORDER BY doc_id DESC, chunk_index LIMIT 1)`)
	f.sqlExec(`UPDATE ingest_manifest SET updated_at = now() - interval '10 minutes' WHERE status = 'stored'`)
	// A stored chunk whose dead letter was never resolved.
	f.sqlExec(`
		INSERT INTO dead_letters (dead_letter_id, doc_id, chunk_index, version, source_id, source_native_id, disposition,
		       error_class, stage, attempts, last_outbox_id, first_failed_at, last_failed_at)
		SELECT 'dl_injected', m.doc_id, m.chunk_index, m.version, 'rec', 'x', 'retry', 'transient_exhausted', 'embed', 5, 0, now(), now()
		FROM ingest_manifest m WHERE m.status = 'stored' ORDER BY m.doc_id DESC LIMIT 1`)
	// Recorded but never published: a producer killed after its commit.
	p := f.produce("rec2", f.writeCorpus("rec2", 3, 30), "SLUICE_CRASH_POINT=after-record-before-publish")
	if code, err := p.wait(time.Minute); err != nil || code != 137 {
		t.Fatalf("producer exited %d (%v), want 137", code, err)
	}
	// A claim on a text left by a consumer that died two hours ago, with
	// no pipeline running since to sweep it.
	f.sqlExec(`INSERT INTO text_claims (generation, text_hash, claimed_by, claimed_at) VALUES (1, sha256('gone'), 'host:1:dead', now() - interval '2 hours')`)
	// A message stranded in INGEST, after a third run whose work nobody
	// consumes.
	f.runProducer("rec3", f.writeCorpus("rec3", 2, 30))
	f.strandOne()
	f.eventually(30*time.Second, "the stranded message's only delivery to expire", func() bool {
		c, err := f.js.Consumer(context.Background(), broker.IngestStream, broker.WorkersConsumer)
		if err != nil {
			return false
		}
		info, err := c.Info(context.Background())
		return err == nil && info.NumAckPending == 0 && info.NumRedelivered == 0
	})
	f.eventually(30*time.Second, "the unpublished chunks to pass reconcile's 1s grace", func() bool {
		n, ok := f.tryCount(`SELECT count(*) FROM ingest_manifest WHERE published_at IS NULL AND updated_at < now() - interval '1 second'`)
		return ok && n > 0
	})

	code, out := f.sluice("reconcile", "--grace", "1s")
	if code != 1 {
		t.Fatalf("reconcile over injected faults exited %d, want 1:\n%s", code, out)
	}
	for _, want := range []string{"stored without vector 1", "of which 1 had their job cleared", "stored with an open dead letter: 1", "unpublished (recorded, never confirmed by NATS): ", "stranded in INGEST (no durable will deliver them): 1",
		"generation 2: owes chunks stored over 5m0s ago that nothing queues or carries", "text claims older than 1h0m0s: 1"} {
		if !strings.Contains(out, want) {
			t.Errorf("reconcile output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "unpublished (recorded, never confirmed by NATS): 0") {
		t.Errorf("reconcile did not see the unpublished chunks:\n%s", out)
	}
	code, out = f.sluice("reconcile", "--grace", "1s", "--redrive")
	if code != 0 {
		t.Fatalf("reconcile --redrive exited %d, want 0:\n%s", code, out)
	}
	for _, want := range []string{"redriven marked_for_reingest: 1", "redriven stored_with_open_dead_letter: 1", "redriven stranded: ", "redriven unpublished: ",
		"redriven generations whose backfill stranded chunks: 1", "redriven stale text claims: 1"} {
		if !strings.Contains(out, want) {
			t.Errorf("reconcile --redrive output lacks %q:\n%s", want, out)
		}
	}
	f.services()
	f.runProducer("rec", recDir)
	f.converge(2*time.Minute, 17)
}

// generationStatus is generation g's status in `sluice index ls`.
func (f *fleet) generationStatus(g int) string {
	f.t.Helper()
	code, out := f.sluice("index", "ls", "--json")
	if code != 0 {
		return ""
	}
	var gens []struct {
		Generation int    `json:"generation"`
		Status     string `json:"status"`
	}
	if err := json.Unmarshal([]byte(out), &gens); err != nil {
		f.t.Fatalf("sluice index ls --json: %v\n%s", err, out)
	}
	for _, x := range gens {
		if x.Generation == g {
			return x.Status
		}
	}
	return ""
}
