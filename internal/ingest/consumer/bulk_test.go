package consumer_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/rs/zerolog"

	"github.com/sluicehq/sluice/internal/dev/embedsim"
	"github.com/sluicehq/sluice/internal/ingest/publish"
	"github.com/sluicehq/sluice/internal/ops/reconcile"
	"github.com/sluicehq/sluice/internal/platform/policy"
	"github.com/sluicehq/sluice/internal/provider/batchapi"
	"github.com/sluicehq/sluice/internal/store/bulk"
	"github.com/sluicehq/sluice/internal/store/erase"
	"github.com/sluicehq/sluice/internal/store/generation"
	"github.com/sluicehq/sluice/internal/store/runs"
	"github.com/sluicehq/sluice/pkg/classify"
)

// bulkSource is the source the bulk tests put in bulk mode.
const bulkSource = "archive"

// bulkOptions are a bundle's options with bulkSource in bulk mode, its
// chunks allowed attempts batches, and embed-sim's batches quick.
func bulkOptions(t *testing.T, attempts int, faults embedsim.Faults) options {
	t.Helper()
	tab, err := policy.Parse("p.yaml", fmt.Appendf(nil, "sources:\n  %s:\n    mode: batch\n    batch_attempts: %d\n", bulkSource, attempts),
		policy.Settings{MaxDeliveries: 5, AmbiguousRetries: 2, MaxReplays: 3, BackoffBase: 100 * time.Millisecond, BackoffMax: 2 * time.Second,
			BreakerFailures: 5, BreakerDelay: 10 * time.Second, SoftTimeLimit: time.Minute, HaltMinChunks: 100,
			PayloadRetention: 24 * time.Hour, EscalationRetention: policy.DefaultEscalationRetention}, policy.DefaultRetentionMandate)
	if err != nil {
		t.Fatal(err)
	}
	return options{batchSize: 20, sources: tab, sim: embedsim.Config{Faults: faults, Batch: embedsim.BatchConfig{
		Validating: 100 * time.Millisecond, InProgress: 500 * time.Millisecond, Finalizing: 100 * time.Millisecond, Cancelling: 100 * time.Millisecond}}}
}

// startBulk runs, until the test ends, a consumer whose pipeline admits
// bulkSource's jobs to the ledger, the ledger's builder and poller, and
// the relay's sweeper of owed work, which publishes again what a batch
// hands back: every service bulk mode needs, as a deployment runs them.
func (b *bundle) startBulk(o options) {
	t := b.t
	t.Helper()
	cfg := bulk.Config{Model: "embed-sim-1", Dims: dims, MaxAge: 300 * time.Millisecond, Interval: 100 * time.Millisecond}
	deps := bulk.Deps{Metrics: bulk.NewMetrics(b.reg)}
	ledger, err := bulk.NewLedger(cfg, deps)
	if err != nil {
		t.Fatal(err)
	}
	o.ledger = ledger
	b.startConsumer(o)
	client, err := batchapi.New(batchapi.Config{URL: b.sim.URL()})
	if err != nil {
		t.Fatal(err)
	}
	builder, err := bulk.NewBuilder(b.db.Pool, client, cfg, deps)
	if err != nil {
		t.Fatal(err)
	}
	poller, err := bulk.NewPoller(b.db.Pool, client, b.pipe, b.pipe, cfg, deps)
	if err != nil {
		t.Fatal(err)
	}
	sweeper, err := publish.NewSweeper(publish.SweeperConfig{Grace: time.Millisecond, Interval: 100 * time.Millisecond},
		publish.SweeperDeps{Pool: b.db.Pool, JS: b.js, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { builder.Run(ctx) })
	wg.Go(func() { poller.Run(ctx) })
	wg.Go(func() { _ = sweeper.Run(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
}

// bulkDocs are n documents of one chunk each; those whose index is in
// poison carry the marker embed-sim refuses.
func bulkDocs(n int, poison ...int) map[string][]byte {
	out := make(map[string][]byte, n)
	for i := range n {
		text := fmt.Sprintf("Deed %d of the county archive, recorded for parcel %d in book %d.", i, 1000+i, i%7)
		for _, p := range poison {
			if p == i {
				text += " POISON"
			}
		}
		out[fmt.Sprintf("deed-%03d.txt", i)] = []byte(text)
	}
	return out
}

// A bulk source's chunks are embedded through the Batch API alone: each
// stored with the vector its batch answered, each poison line parked as
// a live call would have parked it, with one dead letter, and the live
// endpoint never asked. Its jobs were acknowledged while the ledger held
// them, and reconcile's lost-work check does not take them for lost.
func TestBulkSourceConvergesThroughTheBatchAPI(t *testing.T) {
	t.Parallel()
	o := bulkOptions(t, 2, embedsim.Faults{Poison: []embedsim.PoisonRule{{Match: "POISON", Kind: embedsim.PoisonInvalidInput}}})
	b := setup(t, o)
	b.startBulk(o)
	b.produce(bulkSource, bulkDocs(30, 4, 17))
	b.waitSettled(60 * time.Second)

	if n := b.count(`SELECT count(*) FROM ingest_manifest WHERE status = 'stored'`); n != 28 {
		t.Errorf("%d chunks stored, want 28", n)
	}
	if n := b.count(`SELECT count(*) FROM chunk_embeddings`); n != 28 {
		t.Errorf("%d vectors, want 28", n)
	}
	if n := b.count(`SELECT count(*) FROM ingest_manifest WHERE status = 'parked' AND last_error_class IS NOT NULL`); n != 2 {
		t.Errorf("%d chunks parked, want the 2 poison ones", n)
	}
	if n := b.count(`SELECT count(*) FROM outbox WHERE subject LIKE 'dlq.%'`); n != 2 {
		t.Errorf("%d dead letters written, want 2", n)
	}
	if c := b.sim.Counts(); c.Requests != 0 {
		t.Errorf("the live endpoint got %d requests; a bulk source's chunks go through batches alone", c.Requests)
	}
	if n := b.count(`SELECT count(*) FROM bulk_members WHERE state = 'pending' OR text <> ''`); n != 0 {
		t.Errorf("%d members pending or keeping their text after every chunk settled", n)
	}
	// A batch settles in the poller's step after its files are applied.
	b.eventually(10*time.Second, "every batch settled", func() bool {
		return b.count(`SELECT count(*) FROM bulk_batches WHERE state NOT IN ('applied', 'requeued')`) == 0
	})
}

// A batch that goes wrong at the provider (fails at validating, expires
// half done, or is lost) hands its unfinished chunks back: they are
// published again and go to another batch, and the load converges with
// every chunk stored once, through batches alone.
func TestBulkBatchThatGoesWrongConvergesInAnother(t *testing.T) {
	t.Parallel()
	for name, faults := range map[string]embedsim.BatchFaults{
		"failed": {FailRate: 1}, "expired": {ExpireRate: 1}, "lost": {LoseRate: 1},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			o := bulkOptions(t, 2, embedsim.Faults{})
			o.sim.Batch.Faults = faults
			o.sim.Batch.Window = 2 * time.Second
			o.sim.Batch.InProgress = time.Second
			b := setup(t, o)
			b.startBulk(o)
			b.produce(bulkSource, bulkDocs(20))
			b.eventually(30*time.Second, "a batch to go wrong", func() bool {
				return b.count(`SELECT count(*) FROM bulk_batches WHERE state = 'requeued'`) > 0
			})
			if err := b.sim.SetBatchFaults(embedsim.BatchFaults{}); err != nil {
				t.Fatal(err)
			}
			b.waitSettled(60 * time.Second)
			if n := b.count(`SELECT count(*) FROM chunk_embeddings`); n != 20 {
				t.Errorf("%d vectors, want 20", n)
			}
			if n := b.count(`SELECT count(*) FROM bulk_members WHERE state = 'requeued'`); n == 0 {
				t.Error("no member was handed back")
			}
			if c := b.sim.Counts(); c.Requests != 0 {
				t.Errorf("the live endpoint got %d requests; a second batch was owed", c.Requests)
			}
		})
	}
}

// Cancelling a run whose source's chunks are at the provider cancels
// the source's batches there; their chunks come back, and the screen
// parks each as run_cancelled with its dead letter, with no other action.
func TestBulkCancelledRunParksItsBatchedChunks(t *testing.T) {
	t.Parallel()
	o := bulkOptions(t, 2, embedsim.Faults{})
	o.sim.Batch.InProgress = time.Minute
	b := setup(t, o)
	b.startBulk(o)
	b.produce(bulkSource, bulkDocs(12))
	b.eventually(30*time.Second, "the batch at the provider", func() bool {
		return b.count(`SELECT count(*) FROM bulk_batches WHERE state = 'in_progress'`) > 0
	})
	ctx := context.Background()
	var run string
	if err := b.db.Pool.QueryRow(ctx, `SELECT run_id FROM ingest_runs WHERE source_id = $1`, bulkSource).Scan(&run); err != nil {
		t.Fatal(err)
	}
	if err := runs.Cancel(ctx, b.db.Pool, run, "test: the load was wrong"); err != nil {
		t.Fatal(err)
	}
	client, err := batchapi.New(batchapi.Config{URL: b.sim.URL()})
	if err != nil {
		t.Fatal(err)
	}
	if done, err := bulk.NewCanceller(b.db.Pool, client, bulk.Deps{}).Cancel(ctx, bulkSource); err != nil || done.AtProvider == 0 {
		t.Fatalf("cancel the source's batches: %+v, %v", done, err)
	}
	b.waitSettled(60 * time.Second)
	if n := b.count(`SELECT count(*) FROM ingest_manifest WHERE status = 'parked' AND last_error_class = $1`, classify.ClassRunCancelled); n != 12 {
		t.Errorf("%d chunks parked as run_cancelled, want 12", n)
	}
	if n := b.count(`SELECT count(*) FROM outbox`); n != 12 {
		t.Errorf("%d dead letters, want 12", n)
	}
	if n := b.count(`SELECT count(*) FROM bulk_batches WHERE state = 'requeued' AND cancel_requested_at IS NOT NULL`); n == 0 {
		t.Error("no cancelled batch settled")
	}
	if n := b.count(`SELECT count(*) FROM chunk_embeddings`); n != 0 {
		t.Errorf("%d vectors stored for a cancelled run", n)
	}
}

// A batch the provider loses is found by the poller; with one batch
// attempt its chunks go to the live endpoint, and the load converges.
func TestBulkLostBatchGoesLiveWhenAttemptsAreSpent(t *testing.T) {
	t.Parallel()
	o := bulkOptions(t, 1, embedsim.Faults{})
	o.sim.Batch.Faults = embedsim.BatchFaults{LoseRate: 1}
	b := setup(t, o)
	b.startBulk(o)
	b.produce(bulkSource, bulkDocs(15))
	b.waitSettled(60 * time.Second)
	if n := b.count(`SELECT count(*) FROM chunk_embeddings`); n != 15 {
		t.Errorf("%d vectors, want 15", n)
	}
	if n := b.count(`SELECT count(*) FROM bulk_batches WHERE state = 'requeued'`); n == 0 {
		t.Error("no lost batch settled as requeued")
	}
	if c := b.sim.Counts(); c.Inputs < 15 {
		t.Errorf("the live endpoint embedded %d inputs, want the 15 chunks the lost batch held", c.Inputs)
	}
}

// While a batch holds a source's chunks, reconcile finds nothing wrong:
// their jobs left INGEST on purpose, and no member is stranded. A
// document erased meanwhile takes its members' text with it, and the
// batch's answer for it writes nothing back.
func TestBulkHeldChunksAreNeitherLostNorResurrected(t *testing.T) {
	t.Parallel()
	o := bulkOptions(t, 2, embedsim.Faults{})
	o.sim.Batch.InProgress = 3 * time.Second
	b := setup(t, o)
	b.startBulk(o)
	docs := bulkDocs(10)
	b.produce(bulkSource, docs)
	b.eventually(30*time.Second, "a batch in progress", func() bool {
		return b.count(`SELECT count(*) FROM bulk_batches WHERE state = 'in_progress'`) > 0
	})
	ctx := context.Background()
	rep, err := reconcile.Run(ctx, b.db.Pool, b.js, reconcile.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Lost != 0 || rep.BulkStranded != 0 {
		t.Errorf("reconcile with chunks in a batch: %d lost, %d stranded; want none", rep.Lost, rep.BulkStranded)
	}
	var gone string
	if err := b.db.Pool.QueryRow(ctx, `SELECT doc_id FROM bulk_members WHERE state = 'pending' ORDER BY doc_id LIMIT 1`).Scan(&gone); err != nil {
		t.Fatal(err)
	}
	if _, err := erase.New(b.db.Pool, nil).Delete(ctx, erase.Request{SourceID: bulkSource, DocIDs: []string{gone}, By: "test",
		Reason: "removed at the source", Execute: true}); err != nil {
		t.Fatal(err)
	}
	if n := b.count(`SELECT count(*) FROM bulk_members WHERE doc_id = $1`, gone); n != 0 {
		t.Errorf("the erased document keeps %d members in the ledger", n)
	}
	b.waitSettled(60 * time.Second)
	b.eventually(30*time.Second, "every batch settled", func() bool {
		return b.count(`SELECT count(*) FROM bulk_batches WHERE state NOT IN ('applied', 'requeued')`) == 0
	})
	if n := b.count(`SELECT count(*) FROM chunk_embeddings WHERE doc_id = $1`, gone); n != 0 {
		t.Errorf("the batch's answer wrote %d vectors of the erased document back", n)
	}
	if n := b.count(`SELECT count(*) FROM chunk_embeddings`); n != 9 {
		t.Errorf("%d vectors, want the 9 documents not erased", n)
	}
	if leaks, err := erase.Check(ctx, b.db.Pool); err != nil || len(leaks) != 0 {
		t.Errorf("erasure check: %v, %v", leaks, err)
	}
}

// A consumer killed at each step of bulk mode (building, uploading,
// creating, polling, applying a slice of the output, before settling),
// then started again, converges with no operator action: every chunk
// stored or parked once, one dead letter for the poison chunk, every
// batch settled and no member stranded. The processes run as the
// consumer's database role.
func TestBulkCrashPointsConverge(t *testing.T) {
	t.Parallel()
	bin := buildConsumer(t)
	policyFile := filepath.Join(t.TempDir(), "policy.yaml")
	if err := os.WriteFile(policyFile, []byte("sources:\n  "+bulkSource+":\n    mode: batch\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, point := range []string{bulk.CrashBuilt, bulk.CrashUploaded, bulk.CrashCreateRequested, bulk.CrashCreated,
		bulk.CrashPolled, bulk.CrashSliceApplied, bulk.CrashApplied} {
		t.Run(point, func(t *testing.T) {
			t.Parallel()
			o := bulkOptions(t, 2, embedsim.Faults{Poison: []embedsim.PoisonRule{{Match: "POISON", Kind: embedsim.PoisonInvalidInput}}})
			b := setup(t, o)
			b.produce(bulkSource, bulkDocs(20, 7))
			env := []string{"DATABASE_URL=" + b.db.RoleURL("sluice_consumer"), "POLICY_FILE=" + policyFile,
				"BULK_MAX_AGE=300ms", "BULK_INTERVAL=100ms"}
			url := b.natsURL()
			b.runConsumer(bin, url, "bulk-"+point, env...)
			b.runConsumer(bin, url, "", env...)
			b.waitSettled(60 * time.Second)
			b.eventually(30*time.Second, "every batch settled", func() bool {
				return b.count(`SELECT count(*) FROM bulk_batches WHERE state NOT IN ('applied', 'requeued')`) == 0
			})
			if n := b.count(`SELECT count(*) FROM chunk_embeddings`); n != 19 {
				t.Errorf("stored %d of 19", n)
			}
			if n := b.count(`SELECT count(*) FROM outbox`); n != 1 {
				t.Errorf("%d dead letters for one poison chunk, want 1", n)
			}
			if n := b.count(`SELECT count(*) FROM bulk_batches WHERE provider_batch_id IS NOT NULL`); n == 0 {
				t.Error("no batch went to the provider")
			}
			if n, err := bulk.Stranded(context.Background(), b.db.Pool); err != nil || n != 0 {
				t.Errorf("%d members stranded (%v)", n, err)
			}
			if c := b.sim.Counts(); c.Requests != 0 {
				t.Errorf("the live endpoint got %d requests", c.Requests)
			}
		})
	}
}

// A consumer killed between uploading a batch's request file and
// recording it leaves the file at the provider, used by no batch; the
// consumer started after it deletes that file on its poller's next pass
// and sends the batch again, and every chunk is stored once.
func TestBulkCrashAfterUploadLeavesNoFile(t *testing.T) {
	t.Parallel()
	bin := buildConsumer(t)
	policyFile := filepath.Join(t.TempDir(), "policy.yaml")
	if err := os.WriteFile(policyFile, []byte("sources:\n  "+bulkSource+":\n    mode: batch\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	o := bulkOptions(t, 2, embedsim.Faults{})
	b := setup(t, o)
	b.produce(bulkSource, bulkDocs(20))
	env := []string{"DATABASE_URL=" + b.db.RoleURL("sluice_consumer"), "POLICY_FILE=" + policyFile,
		"BULK_MAX_AGE=300ms", "BULK_INTERVAL=100ms"}
	url := b.natsURL()
	b.runConsumer(bin, url, "bulk-"+bulk.CrashUploaded, env...)
	if unused := b.unusedFiles(); len(unused) == 0 {
		t.Fatal("the consumer died after uploading, yet embed-sim holds no file unused: the test shows nothing")
	}
	b.runConsumer(bin, url, "", env...)
	b.waitSettled(60 * time.Second)
	b.eventually(30*time.Second, "every batch settled and no file unused", func() bool {
		return b.count(`SELECT count(*) FROM bulk_batches WHERE state NOT IN ('applied', 'requeued')`) == 0 && len(b.unusedFiles()) == 0
	})
	if n := b.count(`SELECT count(*) FROM chunk_embeddings`); n != 20 {
		t.Errorf("stored %d of 20", n)
	}
	if n := b.count(`SELECT count(*) FROM (SELECT 1 FROM chunk_embeddings GROUP BY doc_id, chunk_index HAVING count(*) > 1) d`); n != 0 {
		t.Errorf("%d chunks stored twice", n)
	}
	if c := b.sim.Counts(); c.Requests != 0 {
		t.Errorf("the live endpoint got %d requests", c.Requests)
	}
}

// unusedFiles lists the files embed-sim holds (GET /v1/files) that no
// batch of the ledger uses: none's input, output or error file, among
// the batches whose files are not purged.
func (b *bundle) unusedFiles() []string {
	t := b.t
	t.Helper()
	client, err := batchapi.New(batchapi.Config{URL: b.sim.URL()})
	if err != nil {
		t.Fatal(err)
	}
	files, err := client.AllFiles(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	rows, err := b.db.Pool.Query(context.Background(), `
		SELECT f FROM bulk_batches, unnest(ARRAY[input_file_id, output_file_id, error_file_id]) f
		WHERE files_purged_at IS NULL AND f IS NOT NULL`)
	if err != nil {
		t.Fatal(err)
	}
	used, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	var unused []string
	for _, f := range files {
		if !slices.Contains(used, f.ID) {
			unused = append(unused, f.ID+" ("+f.Filename+")")
		}
	}
	return unused
}

// A bulk source in flight takes nothing from a live source: while the
// bulk source's batch is still at the provider, every live chunk is
// already stored, and the live endpoint was asked for the live source's
// texts alone, so live work never queues behind bulk work.
func TestBulkSourceLeavesLiveWorkAlone(t *testing.T) {
	t.Parallel()
	o := bulkOptions(t, 2, embedsim.Faults{})
	o.sim.Batch.InProgress = time.Minute
	b := setup(t, o)
	b.startBulk(o)
	b.produce(bulkSource, bulkDocs(40))
	b.eventually(30*time.Second, "the bulk source's batch at the provider", func() bool {
		return b.count(`SELECT count(*) FROM bulk_batches WHERE state IN ('validating', 'in_progress')`) > 0
	})
	live := map[string][]byte{}
	for i := range 20 {
		live[fmt.Sprintf("memo-%02d.txt", i)] = fmt.Appendf(nil, "Council memo %d on the harbour works, item %d.", i, 3*i)
	}
	b.produce("clerk", live)
	b.eventually(30*time.Second, "the live source stored", func() bool {
		return b.count(`SELECT count(*) FROM ingest_manifest m JOIN documents d USING (doc_id)
			WHERE d.source_id = 'clerk' AND m.status = 'stored'`) == 20
	})
	if n := b.count(`SELECT count(*) FROM bulk_batches WHERE state IN ('validating', 'in_progress')`); n == 0 {
		t.Fatal("the bulk batch ended before the live source was stored: the test shows nothing")
	}
	if n := b.count(`SELECT count(*) FROM ingest_manifest m JOIN documents d USING (doc_id)
		WHERE d.source_id = $1 AND m.status = 'pending'`, bulkSource); n != 40 {
		t.Errorf("%d of the bulk source's 40 chunks pending while its batch runs", n)
	}
	for _, text := range bulkDocs(40) {
		if b.sim.Seen(string(text)) {
			t.Fatalf("the live endpoint was asked for a bulk chunk: %q", text)
		}
	}
	if c := b.sim.Counts(); c.Inputs != 20 {
		t.Errorf("the live endpoint embedded %d inputs, want the live source's 20", c.Inputs)
	}
}

// A generation created in bulk mode is backfilled through the Batch API
// by the running consumer: its vectors are the later model's at its
// size, one per stored chunk, and the live endpoint is not asked for any
// of them. A batch the provider loses hands its chunks back to the
// backfill queue, and the generation still becomes ready by itself.
func TestBulkBackfillOfAGenerationInBatchMode(t *testing.T) {
	t.Parallel()
	bin := buildConsumer(t)
	o := bulkOptions(t, 2, embedsim.Faults{})
	o.sim.Batch.Faults = embedsim.BatchFaults{LoseRate: 1}
	b := setup(t, o)
	env := []string{"DATABASE_URL=" + b.db.RoleURL("sluice_consumer"), "BULK_MAX_AGE=300ms", "BULK_INTERVAL=100ms"}
	b.runConsumer(bin, b.natsURL(), "", env...)
	b.produce("src", docs("held", 15, ""))
	b.waitSettled(30 * time.Second)
	liveInputs := b.sim.Counts().Inputs

	ctx := context.Background()
	created, err := generation.New(b.db.Pool).Create(ctx, generation.Spec{Model: laterModel, Dims: laterDims,
		Chunking: generation.Chunking{Size: 400, Overlap: 0, Unit: "chars"}, Mode: policy.ModeBatch},
		generation.Request{By: "test", Reason: "a larger model, in bulk", Execute: true})
	if err != nil {
		t.Fatal(err)
	}
	gen := created.Generation
	b.eventually(60*time.Second, "a lost batch handed back", func() bool {
		return b.count(`SELECT count(*) FROM bulk_batches WHERE generation = $1 AND state = 'requeued'`, gen) > 0
	})
	if err := b.sim.SetBatchFaults(embedsim.BatchFaults{}); err != nil {
		t.Fatal(err)
	}
	b.eventually(90*time.Second, "the generation to become ready", func() bool {
		g, err := generation.Get(ctx, b.db.Pool, gen)
		return err == nil && g.Status == generation.Ready
	})
	stored := b.count(`SELECT count(*) FROM ingest_manifest WHERE status = 'stored'`)
	if n := b.count(`SELECT count(*) FROM generation_embeddings WHERE generation = $1 AND model = $2 AND dims = $3`, gen, laterModel, laterDims); n != stored {
		t.Errorf("generation %d holds %d vectors of %s at %d dims, want one per stored chunk (%d)", gen, n, laterModel, laterDims, stored)
	}
	if n := b.count(`SELECT count(*) FROM bulk_members WHERE generation = $1 AND state = 'applied'`, gen); n != stored {
		t.Errorf("%d members applied in generation %d, want %d", n, gen, stored)
	}
	if got := b.sim.Counts().Inputs; got != liveInputs {
		t.Errorf("the live endpoint embedded %d inputs for the generation in bulk mode", got-liveInputs)
	}
}

// A bulk load whose documents repeat texts pays for each distinct text
// once: the provider gets no more request lines than there are distinct
// texts, every chunk that shares a text is stored with that text's
// vector, and a poison text shared by two chunks parks both, each with
// its own dead letter.
func TestBulkRepeatedTextsArePaidOnce(t *testing.T) {
	t.Parallel()
	o := bulkOptions(t, 2, embedsim.Faults{Poison: []embedsim.PoisonRule{{Match: "POISON", Kind: embedsim.PoisonInvalidInput}}})
	b := setup(t, o)
	b.startBulk(o)
	docs := map[string][]byte{}
	for i := range 18 {
		docs[fmt.Sprintf("deed-%03d.txt", i)] = []byte(fmt.Sprintf("Standard clause %d of every deed in the county archive.", i%6))
	}
	for i := 18; i < 20; i++ {
		docs[fmt.Sprintf("deed-%03d.txt", i)] = []byte("A clause two deeds share, which the provider refuses: POISON")
	}
	b.produce(bulkSource, docs)
	b.waitSettled(60 * time.Second)

	if n := b.count(`SELECT count(*) FROM ingest_manifest WHERE status = 'stored'`); n != 18 {
		t.Errorf("%d chunks stored, want 18", n)
	}
	if n := b.count(`SELECT count(DISTINCT embedding::text) FROM chunk_embeddings`); n != 6 {
		t.Errorf("%d distinct vectors stored, want one per distinct text, 6", n)
	}
	if n := b.count(`SELECT count(*) FROM ingest_manifest WHERE status = 'parked' AND last_error_class IS NOT NULL`); n != 2 {
		t.Errorf("%d chunks parked, want both chunks of the poison text", n)
	}
	if n := b.count(`SELECT count(*) FROM outbox WHERE subject LIKE 'dlq.%'`); n != 2 {
		t.Errorf("%d dead letters written, want one per parked chunk, 2", n)
	}
	client, err := batchapi.New(batchapi.Config{URL: b.sim.URL()})
	if err != nil {
		t.Fatal(err)
	}
	page, err := client.ListBatches(context.Background(), batchapi.ListParams{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	var lines int
	for _, pb := range page.Data {
		lines += pb.RequestCounts.Total
	}
	if lines == 0 || lines > 7 {
		t.Errorf("the provider got %d request lines for 7 distinct texts", lines)
	}
	if c := b.sim.Counts(); c.Requests != 0 {
		t.Errorf("the live endpoint got %d requests; a bulk source's chunks go through batches alone", c.Requests)
	}
}
