package pipeline

import (
	"context"
	"slices"
	"testing"

	"github.com/sluicehq/sluice/internal/store/bulk"
	"github.com/sluicehq/sluice/internal/store/manifest"
	"github.com/sluicehq/sluice/migrations"
	"github.com/sluicehq/sluice/pkg/messages"
	"github.com/sluicehq/sluice/pkg/vectorstore"
)

// An admission to the bulk ledger looks the texts up again once it
// holds their documents, which wait out a poller applying a batch of
// theirs: a text a batch stored since the pipeline first looked takes
// that vector and is not sent again; a deleted document's chunk is
// admitted nowhere; the rest are admitted.
func TestAdmissionReusesATextStoredSinceTheLookup(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p, db, _ := storePipeline(t)
	p.reused = p.metrics.Reuse.WithLabelValues("1")
	ledger, err := bulk.NewLedger(bulk.Config{Model: p.cfg.Model, Dims: migrations.DefaultDims}, bulk.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	p.ledger, p.gen = ledger, 1

	const shared, fresh = "a paragraph a batch has just stored", "a paragraph nobody has sent yet"
	job := func(docID, text string, status manifest.DocStatus) *Job {
		t.Helper()
		hash, err := messages.ContentHash(text, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.Pool.Exec(ctx, `
			INSERT INTO documents (doc_id, source_id, source_native_id, version, content_hash, chunk_count, status)
			VALUES ($1, 's', $1, 1, $2, 1, $3)`, docID, hash, status); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Pool.Exec(ctx, `
			INSERT INTO ingest_manifest (doc_id, chunk_index, version, content_hash, status, job)
			VALUES ($1, 0, 1, $2, $3, '\x7b7d')`, docID, hash, manifest.Pending); err != nil {
			t.Fatal(err)
		}
		j := &Job{Delivered: 1, textHash: vectorstore.HashText(text)}
		j.chunk = messages.ChunkJob{DocID: docID, DocVersion: 1, ChunkCount: 1, SourceID: "s", SourceNativeID: docID,
			ContentHash: hash, Text: text}
		return j
	}
	// The batch's result, stored after the pipeline's first lookup.
	answered := job("answered", shared, manifest.DocProcessing)
	answered.vector = make([]float32, migrations.DefaultDims)
	answered.vector[0] = 1
	if err := p.storeAll(ctx, []*Job{answered}); err != nil || answered.Outcome != Stored {
		t.Fatalf("store the batch's result: %v, %v", answered.Outcome, err)
	}

	twin, other, gone := job("twin", shared, manifest.DocProcessing), job("other", fresh, manifest.DocProcessing), job("gone", shared, manifest.DocDeleted)
	refused, err := p.admitHeld(ctx, []*Job{twin, other, gone})
	if err != nil || len(refused) != 0 {
		t.Fatalf("admitHeld = %v, %v", refused, err)
	}
	if twin.Outcome != Undecided || !slices.Equal(twin.vector, answered.vector) {
		t.Errorf("the twin of a stored text: %v with a vector of %d values, want undecided with the stored vector", twin.Outcome, len(twin.vector))
	}
	if other.Outcome != Batched {
		t.Errorf("a text nobody stored: %v, want batched", other.Outcome)
	}
	if gone.Outcome != Superseded {
		t.Errorf("a deleted document's chunk: %v, want superseded", gone.Outcome)
	}
	var members []string
	rows, err := db.Pool.Query(ctx, `SELECT doc_id FROM bulk_members ORDER BY doc_id`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var d string
		if err := rows.Scan(&d); err != nil {
			t.Fatal(err)
		}
		members = append(members, d)
	}
	if !slices.Equal(members, []string{"other"}) {
		t.Errorf("the ledger holds %q, want only the text nobody stored", members)
	}
}
