package producer_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sluicehq/sluice/internal/content/extract/scantest"
	"github.com/sluicehq/sluice/internal/platform/crashpoint"
	"github.com/sluicehq/sluice/internal/store/erase"
	"github.com/sluicehq/sluice/internal/store/runs"
	"github.com/sluicehq/sluice/pkg/messages"
)

// runProducer runs the producer to its end and returns whether it
// succeeded, with its log.
func (b *interruptBundle) runProducer(args []string, env ...string) (bool, string) {
	b.t.Helper()
	p := b.startProducerWith(append([]string{"--source", "docs"}, args...), env...)
	err := p.Wait()
	log, _ := os.ReadFile(p.LogPath())
	return err == nil, string(log)
}

// deleted counts the source's deleted documents.
func (b *interruptBundle) deleted() int {
	return b.count(`SELECT count(*) FROM documents WHERE status = 'deleted'`)
}

// noLeaks fails the test if any deleted document still has data.
func (b *interruptBundle) noLeaks() {
	b.t.Helper()
	leaks, err := erase.Check(context.Background(), b.db.Pool)
	if err != nil || len(leaks) != 0 {
		b.t.Fatalf("erasure check: %v, %v", leaks, err)
	}
}

// syncedCorpus writes n documents, syncs them as the source and waits
// until every chunk is stored; it returns their directory.
func (b *interruptBundle) syncedCorpus(n int) string {
	b.t.Helper()
	dir := writeCorpus(b.t, n)
	if ok, log := b.runProducer([]string{"--sync", dir}); !ok {
		b.t.Fatalf("first sync failed:\n%s", log)
	}
	b.eventually(60*time.Second, "every chunk stored", func() bool {
		return b.count(`SELECT count(*) FROM chunk_embeddings`) == n
	})
	return dir
}

// A sync deletes the source's documents its run did not read, only when
// it read the whole input: a missing input or a truncated JSONL line
// deletes nothing, and a sync over the max-delete guard is refused with
// the way to force it. Deleted documents keep no vector, chunk text or
// job, while consumers store the rest; a tombstone deletes its document
// and re-adding it later ingests it again.
func TestSyncDeletesOnlyAfterACompleteRead(t *testing.T) {
	t.Parallel()
	b := newInterruptBundle(t)
	b.startServices()
	dir := b.syncedCorpus(10)

	for _, name := range []string{"d000.txt", "d001.txt"} {
		if err := os.Remove(filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	if ok, _ := b.runProducer([]string{"--sync", dir, filepath.Join(t.TempDir(), "unmounted")}); ok {
		t.Error("a sync with a missing input succeeded")
	}
	if n := b.deleted(); n != 0 {
		t.Fatalf("a sync that could not read an input deleted %d documents", n)
	}
	if ok, log := b.runProducer([]string{"--sync", dir}); !ok {
		t.Fatalf("sync failed:\n%s", log)
	}
	if n := b.deleted(); n != 2 {
		t.Fatalf("sync deleted %d documents, want the 2 removed", n)
	}
	gone := messages.DocID("docs", "d000.txt")
	if n := b.count(`SELECT count(*) FROM chunk_embeddings WHERE doc_id = $1`, gone); n != 0 {
		t.Errorf("a deleted document keeps %d vectors", n)
	}
	b.noLeaks()

	for i := 2; i < 8; i++ {
		if err := os.Remove(filepath.Join(dir, fmt.Sprintf("d%03d.txt", i))); err != nil {
			t.Fatal(err)
		}
	}
	ok, log := b.runProducer([]string{"--sync", dir})
	if ok || !strings.Contains(log, "would delete 6 of the 8 documents") || !strings.Contains(log, "--max-delete-fraction 1") {
		t.Fatalf("a sync over the guard: ok=%v, want refused saying how to force it:\n%s", ok, log)
	}
	if n := b.deleted(); n != 2 {
		t.Fatalf("a refused sync deleted documents: %d deleted", n)
	}
	if ok, log := b.runProducer([]string{"--sync", "--max-delete-fraction", "1", dir}); !ok {
		t.Fatalf("forced sync failed:\n%s", log)
	}
	if n := b.deleted(); n != 8 {
		t.Fatalf("forced sync: %d deleted, want 8", n)
	}
	b.noLeaks()

	// Re-added: a new version, ingested as usual.
	if err := os.WriteFile(filepath.Join(dir, "d000.txt"), []byte("document 0 is back, about weirs"), 0o644); err != nil {
		t.Fatal(err)
	}
	if ok, log := b.runProducer([]string{dir}); !ok {
		t.Fatalf("re-add failed:\n%s", log)
	}
	b.eventually(60*time.Second, "the re-added document stored at version 3", func() bool {
		return b.count(`SELECT count(*) FROM chunk_embeddings c JOIN documents d USING (doc_id)
			WHERE doc_id = $1 AND d.status = 'ready' AND c.version = 3`, gone) == 1
	})
}

// JSONL: a tombstone deletes its document; a truncated last line makes
// the read partial, so a sync deletes nothing then.
func TestJSONLTombstonesAndTruncatedInput(t *testing.T) {
	t.Parallel()
	b := newInterruptBundle(t)
	path := filepath.Join(t.TempDir(), "docs.jsonl")
	write := func(lines ...string) {
		if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(`{"id":"a","text":"alpha"}`, `{"id":"b","text":"beta"}`, `{"id":"c","text":"gamma"}`, `{"id":"d","text":"delta"}`)
	if ok, log := b.runProducer([]string{"--jsonl", path}); !ok {
		t.Fatalf("first run failed:\n%s", log)
	}
	write(`{"id":"a","text":"alpha"}`, `{"id":"b","deleted":true}`, `{"id":"c","text":"gamma"}`, `{"id":"`)
	if ok, log := b.runProducer([]string{"--sync", "--jsonl", path}); !ok {
		t.Fatalf("run failed:\n%s", log)
	}
	var status string
	if err := b.db.Pool.QueryRow(context.Background(), `SELECT status FROM documents WHERE doc_id = $1`, messages.DocID("docs", "b")).Scan(&status); err != nil || status != "deleted" {
		t.Errorf("the tombstoned document is %q (%v), want deleted", status, err)
	}
	if n := b.deleted(); n != 1 {
		t.Errorf("%d deleted, want only the tombstone's: the truncated read must stop the sync", n)
	}
	b.noLeaks()
}

// kill -9 of the producer between a sync's delete transactions leaves
// its run unfinished; a run again finishes the deletes.
func TestKilledSyncIsFinishedByTheNextRun(t *testing.T) {
	t.Parallel()
	b := newInterruptBundle(t)
	b.startServices()
	dir := writeCorpus(t, 500)
	if ok, log := b.runProducer([]string{dir}, "PRODUCER_BATCH_DOCS=200"); !ok {
		t.Fatalf("first run failed:\n%s", log)
	}
	for i := 50; i < 500; i++ {
		if err := os.Remove(filepath.Join(dir, fmt.Sprintf("d%03d.txt", i))); err != nil {
			t.Fatal(err)
		}
	}
	ok, _ := b.runProducer([]string{"--sync", "--max-delete-fraction", "1", dir}, "PRODUCER_BATCH_DOCS=200", crashpoint.EnvVar+"=after-delete-batch")
	if ok {
		t.Fatal("the producer survived its crash point")
	}
	if n := b.deleted(); n == 0 || n >= 450 {
		t.Fatalf("%d deleted when the producer died, want some of the 450 but not all", n)
	}
	var runID string
	if err := b.db.Pool.QueryRow(context.Background(), `SELECT run_id FROM ingest_runs ORDER BY started_at DESC LIMIT 1`).Scan(&runID); err != nil {
		t.Fatal(err)
	}
	if st, _, err := runs.Get(context.Background(), b.db.Pool, runID); err != nil || st == runs.Completed {
		t.Fatalf("the killed sync's run is %s (%v), want it not completed", st, err)
	}
	b.noLeaks()
	if ok, log := b.runProducer([]string{"--sync", "--max-delete-fraction", "1", dir}, "PRODUCER_BATCH_DOCS=200"); !ok {
		t.Fatalf("re-run failed:\n%s", log)
	}
	if n := b.deleted(); n != 450 {
		t.Fatalf("%d deleted after the re-run, want 450", n)
	}
	b.noLeaks()
}

// A file that exists but fails to read is parked, not missing: a sync
// deletes the documents whose files are gone, never the parked one, whose
// earlier version stays served. Only input whose documents cannot be
// named (a JSONL line without a readable id) keeps a sync from deleting.
func TestSyncDeletesBesideAParkedFile(t *testing.T) {
	t.Parallel()
	b := newInterruptBundle(t)
	b.startServices()
	dir := b.syncedCorpus(10)
	if err := os.Remove(filepath.Join(dir, "d001.txt")); err != nil {
		t.Fatal(err)
	}
	// d000.txt becomes a truncated PDF, which fails extraction: parked.
	truncated, err := os.ReadFile(filepath.Join(filepath.Dir(scantest.PagesPDF()), "truncated.pdf"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "d000.txt"), truncated, 0o644); err != nil {
		t.Fatal(err)
	}
	ok, log := b.runProducer([]string{"--sync", dir})
	if !ok {
		t.Fatalf("sync failed:\n%s", log)
	}
	if n := b.deleted(); n != 1 {
		t.Fatalf("sync deleted %d documents, want d001.txt alone beside the parked d000.txt:\n%s", n, log)
	}
	parked := messages.DocID("docs", "d000.txt")
	// The dead letter reaches its table through the outbox and its relay.
	b.eventually(30*time.Second, "the unreadable d000.txt's dead letter", func() bool {
		return b.count(`SELECT count(*) FROM dead_letters WHERE doc_id = $1 AND resolved_at IS NULL`, parked) == 1
	})
	b.servesVersion(parked, 1, "the parked d000.txt")
	d, err := erase.Show(context.Background(), b.db.Pool, parked)
	if err != nil || !strings.Contains(d.Serving(), "search serves version 1: version 2 failed") {
		t.Errorf("docs show of the parked d000.txt says %q (%v), want that version 1 is served while version 2 failed", d.Serving(), err)
	}
	b.noLeaks()

	// Fixed at the source: the new version replaces the served one once
	// stored, and the failed version's dead letter is resolved.
	if err := os.WriteFile(filepath.Join(dir, "d000.txt"), []byte("document 0 rewritten, about sluice gates"), 0o644); err != nil {
		t.Fatal(err)
	}
	if ok, log := b.runProducer([]string{"--sync", dir}); !ok {
		t.Fatalf("sync after the fix failed:\n%s", log)
	}
	b.eventually(60*time.Second, "the fixed d000.txt served at version 3", func() bool {
		return b.count(`SELECT count(*) FROM chunk_embeddings WHERE doc_id = $1 AND version = 3`, parked) == 1
	})
	b.servesVersion(parked, 3, "the fixed d000.txt")
	if n := b.count(`SELECT count(*) FROM dead_letters WHERE doc_id = $1 AND resolved_at IS NULL`, parked); n != 0 {
		t.Errorf("the fixed d000.txt still has %d open dead letters, want its failed version's resolved as superseded", n)
	}
}

// servesVersion fails the test unless search serves exactly one chunk of
// docID, at version, by the rule search applies (vectorstore's served
// rows: a ready document's version, else its live version).
func (b *interruptBundle) servesVersion(docID string, version int64, what string) {
	b.t.Helper()
	var served []int64
	rows, err := b.db.Pool.Query(context.Background(), `
		SELECT c.version FROM chunk_embeddings c JOIN documents d USING (doc_id)
		WHERE d.doc_id = $1 AND ((d.status = 'ready' AND c.version = d.version) OR (d.status <> 'ready' AND c.version = d.live_version))`, docID)
	if err == nil {
		served, err = pgx.CollectRows(rows, pgx.RowTo[int64])
	}
	if err != nil || len(served) != 1 || served[0] != version {
		b.t.Errorf("%s: search serves chunks of versions %v (%v), want one of version %d", what, served, err, version)
	}
}
