package bench

import (
	"context"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/dev/testenv"
	"github.com/sluicehq/sluice/internal/store/manifest"
	"github.com/sluicehq/sluice/migrations"
	"github.com/sluicehq/sluice/pkg/vectorstore"
)

// The producer holds PubAcks (PUBLISH_CONFIRM_DELAY), so under load it
// records one after the consumer's store transaction has begun. The
// latency the bench reports still runs from when JetStream took the
// message, its stream timestamp, to the store, and is not negative.
func TestMeasureLatencyAfterAHeldPubAck(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tdb := testenv.NewDatabase(t)
	pool := tdb.Pool
	store, err := vectorstore.Open(ctx, pool, migrations.DefaultDims)
	if err != nil {
		t.Fatal(err)
	}
	const docID = "held-puback"
	if _, err := pool.Exec(ctx, `
		INSERT INTO documents (doc_id, source_id, source_native_id, version, content_hash, chunk_count, status)
		VALUES ($1, 's', $1, 1, 'h', 1, $2)`, docID, manifest.DocProcessing); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `
		INSERT INTO ingest_manifest (doc_id, chunk_index, version, content_hash, status, job)
		VALUES ($1, 0, 1, 'h', $2, '\x7b7d')`, docID, manifest.Pending); err != nil {
		t.Fatal(err)
	}
	c := manifest.MakeChunks(1)
	c.Add(docID, 0, 1)

	// JetStream takes the message; the consumer receives it and begins its
	// store.
	var streamed time.Time
	if err := pool.QueryRow(ctx, `SELECT clock_timestamp()`).Scan(&streamed); err != nil {
		t.Fatal(err)
	}
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	vec := make([]float32, migrations.DefaultDims)
	vec[0] = 1
	if _, err := store.Upsert(ctx, tx, []vectorstore.Record{{DocID: docID, Version: 1, ContentHash: "h", Model: "sim",
		Embedding: vec, Text: "text"}}); err != nil {
		t.Fatal(err)
	}
	var began time.Time
	if err := tx.QueryRow(ctx, `SELECT now()`).Scan(&began); err != nil {
		t.Fatal(err)
	}
	// Meanwhile the producer records the PubAck it held.
	if err := manifest.ConfirmPublished(ctx, pool, c, []int64{1}); err != nil {
		t.Fatal(err)
	}
	var confirmed time.Time
	if err := pool.QueryRow(ctx, `SELECT published_at FROM ingest_manifest WHERE doc_id = $1`, docID).Scan(&confirmed); err != nil {
		t.Fatal(err)
	}
	if !confirmed.After(began) {
		t.Fatalf("PubAck recorded at %v, not after the store began at %v", confirmed, began)
	}
	if err := manifest.MarkStored(ctx, tx, c, []int32{1}, []time.Time{streamed}); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}

	res, err := measure(ctx, &database{pool: pool}, streamed.Add(-time.Second), 1)
	if err != nil {
		t.Fatalf("measure: %v", err)
	}
	if want := float64(began.Sub(streamed).Microseconds()) / 1000; res.Stored != 1 || res.P50Ms != want || res.P99Ms != want {
		t.Errorf("measured %+v; want one stored chunk at %v ms, from its stream timestamp to its store", res, want)
	}
}
