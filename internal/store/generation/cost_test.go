package generation_test

import (
	"errors"
	"testing"

	"github.com/sluicehq/sluice/internal/dev/testenv"
	"github.com/sluicehq/sluice/internal/provider/tokens"
	"github.com/sluicehq/sluice/internal/store/generation"
	"github.com/sluicehq/sluice/migrations"
	"github.com/sluicehq/sluice/pkg/vectorstore"
)

// The cost to finish counts, with the generation's model's tokenizer,
// the text generation 1 holds of the chunks the generation owes: not
// those it stores, not parked ones, and not text of another content;
// owed chunks without such text are counted apart.
func TestCostToFinishCountsTheOwedChunksText(t *testing.T) {
	t.Parallel()
	const dims = 4
	const model = "text-embedding-3-small"
	db := testenv.NewDatabase(t, testenv.WithDims(dims))
	ctx := t.Context()
	operator := db.RolePool(t, migrations.OperatorRole)
	created, err := generation.New(operator).Create(ctx, generation.Spec{Model: model, Dims: dims, Chunking: generation.Chunking{Size: 10, Overlap: 0, Unit: "chars"}},
		generation.Request{By: "test", Reason: "cost", Execute: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, sql := range []string{
		`INSERT INTO documents (doc_id, source_id, source_native_id, version, content_hash, chunk_count, status)
		 VALUES ('a', 's', 'a', 1, 'h', 4, 'ready'), ('p', 's', 'p', 1, 'h', 1, 'failed'), ('n', 's', 'n', 1, 'h', 1, 'processing')`,
		`INSERT INTO ingest_manifest (doc_id, chunk_index, version, content_hash, status, job) VALUES
		 ('a', 0, 1, 'h0', 'stored', NULL), ('a', 1, 1, 'h1', 'stored', NULL), ('a', 2, 1, 'h2', 'stored', NULL),
		 ('a', 3, 1, 'h3', 'stored', NULL), ('p', 0, 1, 'h0', 'parked', NULL), ('n', 0, 1, 'h0', 'pending', '\x7b7d')`,
	} {
		if _, err := db.Pool.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	texts := []string{"stored already in the new generation", "the owed chunk that costs tokens",
		"another owed chunk, a little longer than the one before it", "text of a content the manifest no longer has"}
	first, err := vectorstore.OpenGeneration(ctx, db.Pool, generation.First, dims)
	if err != nil {
		t.Fatal(err)
	}
	second, err := vectorstore.OpenGeneration(ctx, db.Pool, created.Generation, dims)
	if err != nil {
		t.Fatal(err)
	}
	v := []float32{1, 0, 0, 0}
	rec := func(doc string, chunk int, hash, text string) vectorstore.Record {
		return vectorstore.Record{DocID: doc, ChunkIndex: chunk, Version: 1, ContentHash: hash, Model: model, Embedding: v, Text: text}
	}
	if _, err := first.Upsert(ctx, db.Pool, []vectorstore.Record{rec("a", 0, "h0", texts[0]), rec("a", 1, "h1", texts[1]),
		rec("a", 2, "h2", texts[2]), rec("a", 3, "stale", texts[3]), rec("p", 0, "h0", "parked text")}); err != nil {
		t.Fatal(err)
	}
	if _, err := second.Upsert(ctx, db.Pool, []vectorstore.Record{rec("a", 0, "h0", texts[0])}); err != nil {
		t.Fatal(err)
	}
	g, err := generation.Get(ctx, operator, created.Generation)
	if err != nil {
		t.Fatal(err)
	}
	got, err := generation.CostToFinish(ctx, operator, g)
	if err != nil {
		t.Fatal(err)
	}
	counter, exact := tokens.ForModel(model)
	want := generation.Cost{Generation: created.Generation, Tokens: int64(counter.Count(texts[1]) + counter.Count(texts[2])),
		Encoding: counter.Encoding(), Exact: exact, Counted: 2, Unheld: 2}
	if got != want || !exact {
		t.Errorf("cost %+v, want %+v with an exact tokenizer", got, want)
	}
	one, err := generation.Get(ctx, operator, generation.First)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := generation.CostToFinish(ctx, operator, one); !errors.Is(err, vectorstore.ErrFirstGeneration) {
		t.Errorf("cost of generation 1: %v, want ErrFirstGeneration", err)
	}
}
