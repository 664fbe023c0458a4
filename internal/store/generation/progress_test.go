package generation_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/dev/testenv"
	"github.com/sluicehq/sluice/internal/store/generation"
	"github.com/sluicehq/sluice/migrations"
	"github.com/sluicehq/sluice/pkg/vectorstore"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// A generation's progress counts a chunk stored only with a vector of
// the chunk's current version and content, parked as the manifest says,
// and leaves out superseded chunks and deleted documents; measured as
// the operator role.
func TestProgressComparesVectorsWithTheManifest(t *testing.T) {
	t.Parallel()
	const dims = 4
	db := testenv.NewDatabase(t, testenv.WithDims(dims))
	ctx := t.Context()
	operator := db.RolePool(t, migrations.OperatorRole)
	created, err := generation.New(operator).Create(ctx, generation.Spec{Model: "m", Dims: dims, Chunking: generation.Chunking{Size: 10, Overlap: 0, Unit: "chars"}},
		generation.Request{By: "test", Reason: "progress", Execute: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, sql := range []string{
		`INSERT INTO documents (doc_id, source_id, source_native_id, version, content_hash, chunk_count, status)
		 VALUES ('a', 's', 'a', 1, 'h', 5, 'failed'), ('c', 's', 'c', 1, 'h', 1, 'processing'), ('gone', 's', 'gone', 2, '', 0, 'deleted')`,
		`INSERT INTO ingest_manifest (doc_id, chunk_index, version, content_hash, status, job) VALUES
		 ('a', 0, 2, 'h0', 'stored', NULL), ('a', 1, 2, 'h1', 'stored', NULL), ('a', 2, 2, 'h2', 'stored', NULL),
		 ('a', 3, 2, 'h3', 'parked', NULL), ('a', 4, 2, 'h4', 'superseded', NULL),
		 ('c', 0, 1, 'h0', 'pending', '\x7b7d'),
		 ('gone', 0, 2, 'h0', 'superseded', NULL), ('gone', 1, 2, 'h1', 'stored', NULL)`,
	} {
		if _, err := db.Pool.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	store, err := vectorstore.OpenGeneration(ctx, db.Pool, created.Generation, dims)
	if err != nil {
		t.Fatal(err)
	}
	v := []float32{1, 0, 0, 0}
	rec := func(doc string, chunk int, version int64, hash string) vectorstore.Record {
		return vectorstore.Record{DocID: doc, ChunkIndex: chunk, Version: version, ContentHash: hash, Model: "m", Embedding: v, Text: "t"}
	}
	// a/2 has only a vector of the version before, a/4 (superseded at
	// version 2) too; at version 2, a/0 is stored and a/1 has another
	// content's vector. Nothing of the deleted document counts, not even
	// a manifest row its erasure left stored.
	if _, err := store.Upsert(ctx, db.Pool, []vectorstore.Record{rec("a", 2, 1, "h2"), rec("a", 4, 1, "h4")}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Pool.Exec(ctx, `UPDATE documents SET version = 2 WHERE doc_id = 'a'`); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Upsert(ctx, db.Pool, []vectorstore.Record{rec("a", 0, 2, "h0"), rec("a", 1, 2, "other")}); err != nil {
		t.Fatal(err)
	}
	g, err := generation.Get(ctx, operator, created.Generation)
	if err != nil {
		t.Fatal(err)
	}
	p, err := generation.ProgressOf(ctx, operator, g)
	if err != nil {
		t.Fatal(err)
	}
	// The rows were just written: all four count in the recent rate.
	rate := 4 / generation.ETAWindow.Seconds()
	eta := 3 / rate
	want := generation.Progress{Generation: created.Generation, Chunks: 5, Stored: 1, Owed: 3, Parked: 1, Vectors: 4, Percent: 20,
		Backfill: generation.BackfillRunning, State: &generation.BackfillState{}, RecentPerSecond: rate, ETASeconds: &eta}
	if !reflect.DeepEqual(p, want) {
		t.Errorf("progress %+v, want %+v", p, want)
	}
	if p.Complete() {
		t.Error("an incomplete generation says it is complete")
	}
}

// sluice index retry counts what it makes owed again, the chunks parked
// in the generation alone (Progress.ParkedHere): not a chunk parked in
// the manifest, which dlq replay retries, nor a parked row of an older
// version, nor one the backfill has released already; executed, it
// clears every parked row of the generation.
func TestRetryCountsTheChunksParkedInTheGenerationAlone(t *testing.T) {
	t.Parallel()
	const dims = 4
	db := testenv.NewDatabase(t, testenv.WithDims(dims))
	ctx := t.Context()
	reg := generation.New(db.RolePool(t, migrations.OperatorRole))
	created, err := reg.Create(ctx, generation.Spec{Model: "m", Dims: dims, Chunking: generation.Chunking{Size: 10, Overlap: 0, Unit: "chars"}},
		generation.Request{By: "test", Reason: "retry", Execute: true})
	if err != nil {
		t.Fatal(err)
	}
	id := created.Generation
	for _, sql := range []string{
		`INSERT INTO documents (doc_id, source_id, source_native_id, version, content_hash, chunk_count, status)
		 VALUES ('a', 's', 'a', 2, 'h', 4, 'failed')`,
		`INSERT INTO ingest_manifest (doc_id, chunk_index, version, content_hash, status, job) VALUES
		 ('a', 0, 2, 'h0', 'stored', NULL), ('a', 1, 2, 'h1', 'parked', NULL), ('a', 2, 2, 'h2', 'stored', NULL), ('a', 3, 2, 'h3', 'stored', NULL)`,
		// Parked here alone: a/0. Parked in the manifest too: a/1. Of an
		// older version: a/2 at version 1. Released by the backfill: a/3.
		`INSERT INTO generation_parked (generation, doc_id, chunk_index, version, content_hash, source_id, error_class, attempts, released_at) VALUES
		 ($1, 'a', 0, 2, 'h0', 's', 'bad_request', 1, NULL), ($1, 'a', 1, 2, 'h1', 's', 'bad_request', 1, NULL),
		 ($1, 'a', 2, 1, 'h2', 's', 'bad_request', 1, NULL), ($1, 'a', 3, 2, 'h3', 's', 'bad_request', 1, now())`,
	} {
		args := []any{}
		if strings.Contains(sql, "$1") {
			args = append(args, id)
		}
		if _, err := db.Pool.Exec(ctx, sql, args...); err != nil {
			t.Fatal(err)
		}
	}
	g, err := generation.Get(ctx, db.Pool, id)
	if err != nil {
		t.Fatal(err)
	}
	p, err := generation.ProgressOf(ctx, db.Pool, g)
	if err != nil {
		t.Fatal(err)
	}
	req := generation.Request{By: "test", Reason: "retry"}
	dry, err := reg.Retry(ctx, id, req)
	if err != nil || dry.Retried != 1 || p.ParkedHere != 1 {
		t.Fatalf("retry (dry run) counts %d (%v), progress %d parked here; want 1 and 1: a/0", dry.Retried, err, p.ParkedHere)
	}
	req.Execute = true
	done, err := reg.Retry(ctx, id, req)
	if err != nil || done.Retried != 1 {
		t.Fatalf("retry: %d (%v), want 1", done.Retried, err)
	}
	var left int
	if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM generation_parked WHERE generation = $1`, id).Scan(&left); err != nil || left != 0 {
		t.Errorf("after a retry, %d parked rows left (%v); want none", left, err)
	}
}
