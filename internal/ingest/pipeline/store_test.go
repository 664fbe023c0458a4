package pipeline

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/sluicehq/sluice/internal/dev/testenv"
	"github.com/sluicehq/sluice/internal/store/manifest"
	"github.com/sluicehq/sluice/migrations"
	"github.com/sluicehq/sluice/pkg/messages"
	"github.com/sluicehq/sluice/pkg/vectorstore"
)

// committed is the clock of storePipeline's pipeline.
var committed = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

// storePipeline is a pipeline that stores into a fresh database, on a
// clock stopped at committed, with its metrics on reg.
func storePipeline(t *testing.T) (*Pipeline, *testenv.Database, *prometheus.Registry) {
	t.Helper()
	db := testenv.NewDatabase(t)
	store, err := vectorstore.Open(t.Context(), db.Pool, migrations.DefaultDims)
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	p := &Pipeline{pool: db.Pool, store: store, metrics: NewMetrics(reg), now: func() time.Time { return committed },
		crash: func(string) {}}
	p.cfg.applyDefaults()
	p.cfg.Model = "sim"
	return p, db, reg
}

// The end-to-end latency runs from when JetStream took the delivered
// message (its stream timestamp) to the store's commit: a job planned
// long before it was republished counts from its republish, not from
// the planning time its body carries.
func TestEndToEndLatencyCountsFromTheStreamTimestamp(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p, db, reg := storePipeline(t)

	const docID, text = "doc-republished", "a chunk republished after an outage"
	hash, err := messages.ContentHash(text, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Pool.Exec(ctx, `
		INSERT INTO documents (doc_id, source_id, source_native_id, version, content_hash, chunk_count, status)
		VALUES ($1, 's', $1, 1, $2, 1, $3)`, docID, hash, manifest.DocProcessing); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Pool.Exec(ctx, `
		INSERT INTO ingest_manifest (doc_id, chunk_index, version, content_hash, status, job)
		VALUES ($1, 0, 1, $2, $3, '\x7b7d')`, docID, hash, manifest.Pending); err != nil {
		t.Fatal(err)
	}
	j := &Job{Delivered: 1, Published: committed.Add(-2 * time.Second)}
	j.chunk = messages.ChunkJob{DocID: docID, DocVersion: 1, ChunkCount: 1, SourceID: "s", SourceNativeID: docID,
		ContentHash: hash, Text: text, PublishedAt: committed.Add(-time.Hour)}
	j.vector = make([]float32, migrations.DefaultDims)
	j.vector[0] = 1
	if err := p.storeAll(ctx, []*Job{j}); err != nil {
		t.Fatal(err)
	}
	if j.Outcome != Stored {
		t.Fatalf("outcome %v, want stored", j.Outcome)
	}
	h := histogram(t, reg, "sluice_end_to_end_latency_seconds")
	if h.GetSampleCount() != 1 || h.GetSampleSum() != 2 {
		t.Errorf("end-to-end latency: %d samples summing to %vs; want one of 2s (stream timestamp to commit)",
			h.GetSampleCount(), h.GetSampleSum())
	}
	var published time.Time
	if err := db.Pool.QueryRow(ctx, `SELECT published_at FROM ingest_manifest WHERE doc_id = $1`, docID).Scan(&published); err != nil {
		t.Fatal(err)
	}
	if !published.Equal(j.Published) {
		t.Errorf("manifest published_at %v; want the stream timestamp %v", published, j.Published)
	}
}

// histogram gathers the one histogram named name from reg.
func histogram(t *testing.T, reg *prometheus.Registry, name string) *dto.Histogram {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) == 1 {
			return mf.GetMetric()[0].GetHistogram()
		}
	}
	t.Fatalf("no histogram %s", name)
	return nil
}

// A document's latency is observed once, when its last chunk makes it
// ready, from when JetStream took its first chunk; a redelivered chunk of
// a document already ready observes nothing.
func TestDocumentReadyLatencyIsObservedOnceFromItsFirstChunk(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p, db, reg := storePipeline(t)
	const docID = "doc-two-chunks"
	if _, err := db.Pool.Exec(ctx, `
		INSERT INTO documents (doc_id, source_id, source_native_id, version, content_hash, chunk_count, status)
		VALUES ($1, 's', $1, 1, 'h', 2, $2)`, docID, manifest.DocProcessing); err != nil {
		t.Fatal(err)
	}
	job := func(index int, published time.Time) *Job {
		t.Helper()
		text := fmt.Sprintf("chunk %d", index)
		hash, err := messages.ContentHash(text, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.Pool.Exec(ctx, `
			INSERT INTO ingest_manifest (doc_id, chunk_index, version, content_hash, status, job)
			VALUES ($1, $2, 1, $3, $4, '\x7b7d') ON CONFLICT DO NOTHING`, docID, index, hash, manifest.Pending); err != nil {
			t.Fatal(err)
		}
		j := &Job{Delivered: 1, Published: published}
		j.chunk = messages.ChunkJob{DocID: docID, ChunkIndex: index, DocVersion: 1, ChunkCount: 2, SourceID: "s",
			SourceNativeID: docID, ContentHash: hash, Text: text}
		j.vector = make([]float32, migrations.DefaultDims)
		j.vector[0] = 1
		return j
	}
	samples := func() (uint64, float64) {
		h := histogram(t, reg, "sluice_document_ready_latency_seconds")
		return h.GetSampleCount(), h.GetSampleSum()
	}
	store1 := func(j *Job) {
		t.Helper()
		if err := p.storeAll(ctx, []*Job{j}); err != nil || j.Outcome != Stored {
			t.Fatalf("store chunk %d: %v, outcome %v", j.chunk.ChunkIndex, err, j.Outcome)
		}
	}
	store1(job(0, committed.Add(-5*time.Second)))
	if n, _ := samples(); n != 0 {
		t.Fatalf("%d document latencies observed with one chunk of two stored; want none", n)
	}
	second := job(1, committed.Add(-time.Second))
	store1(second)
	if n, sum := samples(); n != 1 || sum != 5 {
		t.Fatalf("document latency: %d samples summing to %vs; want one of 5s (first chunk's stream timestamp to the commit)", n, sum)
	}
	second.Outcome = 0
	store1(second)
	if n, _ := samples(); n != 1 {
		t.Errorf("%d document latencies after a redelivery to a ready document; want still 1", n)
	}
}
