package vectorstore_test

import (
	"errors"
	"testing"

	"github.com/sluicehq/sluice/internal/dev/testenv"
	"github.com/sluicehq/sluice/pkg/vectorstore"
	"github.com/sluicehq/sluice/pkg/vectorstore/storetest"
)

// genDims is a later generation's dimension, other than the first's.
const genDims = 4

// openGenerations opens generation 1 (testDims) and a registered
// generation 2 (genDims) on a fresh database of backend, with document
// "a" ready at version 2 and "b" ready at version 1.
func openGenerations(t *testing.T, backend testenv.Backend) (first, second *vectorstore.Postgres, db *testenv.Database) {
	t.Helper()
	first, db = openStore(t, backend, testDims)
	ctx := t.Context()
	if _, err := db.Pool.Exec(ctx, `
		INSERT INTO index_generations (generation, model, dims, chunk_size, chunk_overlap, chunk_unit, status)
		VALUES (2, 'small', $1, 512, 64, 'tokens', 'building')`, genDims); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Pool.Exec(ctx, `
		INSERT INTO documents (doc_id, source_id, source_native_id, version, content_hash, chunk_count, status)
		VALUES ('a', 's', 'a', 2, 'h', 2, 'ready'), ('b', 's', 'b', 1, 'h', 1, 'ready')`); err != nil {
		t.Fatal(err)
	}
	second, err := vectorstore.OpenGeneration(ctx, db.Pool, 2, genDims)
	if err != nil {
		t.Fatalf("OpenGeneration(2): %v", err)
	}
	if second.Generation() != 2 || second.Dims() != genDims || second.Mode() != first.Mode() {
		t.Fatalf("generation 2's store: generation %d, dims %d, mode %s", second.Generation(), second.Dims(), second.Mode())
	}
	return first, second, db
}

func rec(doc string, chunk int, version int64, hash string, v []float32) vectorstore.Record {
	return vectorstore.Record{DocID: doc, ChunkIndex: chunk, Version: version, ContentHash: hash, Model: "m", Embedding: v, Text: doc + " text"}
}

// A later generation's store passes the conformance suite on its rows of
// generation_embeddings, beside another generation's rows of the same
// chunks, which it must neither see nor touch.
func TestGenerationConformance(t *testing.T) {
	t.Parallel()
	testenv.ForEachBackend(t, func(t *testing.T, backend testenv.Backend) {
		f := storetest.Features{Table: vectorstore.GenerationTable, Where: "generation = 2", NoRetain: true}
		storetest.RunWith(t, f, func(t *testing.T) (vectorstore.Store, vectorstore.DB) {
			_, db := openStore(t, backend, testDims)
			ctx := t.Context()
			if _, err := db.Pool.Exec(ctx, `
				INSERT INTO index_generations (generation, model, dims, chunk_size, chunk_overlap, chunk_unit, status)
				SELECT g, 'm', $1, 512, 64, 'tokens', 'building' FROM generate_series(2, 3) g`, genDims); err != nil {
				t.Fatal(err)
			}
			third, err := vectorstore.OpenGeneration(ctx, db.Pool, 3, genDims)
			if err != nil {
				t.Fatal(err)
			}
			var others []vectorstore.Record
			for _, id := range []string{"doc", "a", "x", "doc-a", "d1", "ready", "processing", "pending", "failed", "orphan"} {
				for chunk := range 3 {
					others = append(others, rec(id, chunk, 1, "other", []float32{0, 0, 0, 1}))
				}
			}
			if _, err := third.Upsert(ctx, db.Pool, others); err != nil {
				t.Fatal(err)
			}
			store, err := vectorstore.OpenGeneration(ctx, db.Pool, 2, genDims)
			if err != nil {
				t.Fatal(err)
			}
			return store, db.Pool
		})
	})
}

// A later generation's store keeps the first's guarantees on its own
// rows: the version guard, search of ready current versions, pruning;
// and it never reads or writes another generation's vectors.
func TestGenerationStoreIsBoundToItsGeneration(t *testing.T) {
	t.Parallel()
	testenv.ForEachBackend(t, func(t *testing.T, backend testenv.Backend) {
		first, second, db := openGenerations(t, backend)
		ctx := t.Context()
		x, y := []float32{1, 0, 0, 0}, []float32{0, 1, 0, 0}
		wide := []float32{1, 0, 0, 0, 0, 0, 0, 0}
		if _, err := first.Upsert(ctx, db.Pool, []vectorstore.Record{rec("a", 0, 2, "h0", wide), rec("b", 0, 1, "h0", wide)}); err != nil {
			t.Fatal(err)
		}
		out, err := second.Upsert(ctx, db.Pool, []vectorstore.Record{rec("a", 0, 2, "h0", x), rec("a", 1, 2, "h1", y), rec("b", 0, 1, "h0", y)})
		if err != nil {
			t.Fatal(err)
		}
		want := []vectorstore.Outcome{vectorstore.Inserted, vectorstore.Inserted, vectorstore.Inserted}
		if !equalOutcomes(out, want) {
			t.Errorf("first upsert into generation 2: %v, want %v (generation 1's rows are not generation 2's)", out, want)
		}
		out, err = second.Upsert(ctx, db.Pool, []vectorstore.Record{rec("a", 0, 2, "h0", x), rec("a", 1, 1, "old", x), rec("b", 0, 1, "h0-new", x)})
		if err != nil {
			t.Fatal(err)
		}
		want = []vectorstore.Outcome{vectorstore.Unchanged, vectorstore.Stale, vectorstore.Updated}
		if !equalOutcomes(out, want) {
			t.Errorf("second upsert into generation 2: %v, want %v", out, want)
		}
		if _, err := second.Upsert(ctx, db.Pool, []vectorstore.Record{rec("a", 0, 2, "h0", wide)}); !errors.As(err, new(*vectorstore.RecordError)) {
			t.Errorf("a vector of generation 1's dimension into generation 2: %v, want a RecordError", err)
		}

		hits, err := second.Search(ctx, db.Pool, x, vectorstore.SearchOptions{K: 10})
		if err != nil {
			t.Fatal(err)
		}
		if len(hits) != 3 || hits[0].DocID != "a" || hits[0].ChunkIndex != 0 || hits[1].DocID != "b" || hits[2].ChunkIndex != 1 || hits[0].Score < 0.999 {
			t.Fatalf("generation 2's search: %+v, want a/0 and b/0 (its x-aligned chunks) then a/1", hits)
		}
		firstHits, err := first.Search(ctx, db.Pool, wide, vectorstore.SearchOptions{K: 10})
		if err != nil || len(firstHits) != 2 {
			t.Fatalf("generation 1's search: %+v, %v; want its own 2 chunks", firstHits, err)
		}

		if n, err := second.PruneVersion(ctx, db.Pool, "a", 1); err != nil || n != 1 {
			t.Errorf("prune a to 1 chunk in generation 2: %d, %v; want 1 row", n, err)
		}
		if err := second.Retain(ctx, db.Pool, []string{"a"}, []int32{0}); !errors.Is(err, vectorstore.ErrNoRetention) {
			t.Errorf("Retain on generation 2: %v, want ErrNoRetention", err)
		}
		counts, err := vectorstore.GenerationVectors(ctx, db.Pool)
		if err != nil || counts[1] != 2 || counts[2] != 2 {
			t.Errorf("vectors by generation %v, %v; want 2 in each", counts, err)
		}
		if _, err := vectorstore.DropGeneration(ctx, db.Pool, 1); !errors.Is(err, vectorstore.ErrFirstGeneration) {
			t.Errorf("DropGeneration(1): %v, want ErrFirstGeneration", err)
		}
		if n, err := vectorstore.DropGeneration(ctx, db.Pool, 2); err != nil || n != 2 {
			t.Errorf("DropGeneration(2): %d, %v; want its 2 rows", n, err)
		}
		if counts, _ := vectorstore.GenerationVectors(ctx, db.Pool); counts[1] != 2 || counts[2] != 0 {
			t.Errorf("after dropping generation 2: %v; want generation 1's 2 rows untouched and none of 2", counts)
		}
	})
}

// Generations side by side in one table never see each other's rows:
// the same chunks in generation 3 change no outcome, hit, prune or drop
// of generation 2.
func TestGenerationsSideBySideStayApart(t *testing.T) {
	t.Parallel()
	testenv.ForEachBackend(t, func(t *testing.T, backend testenv.Backend) {
		_, second, db := openGenerations(t, backend)
		ctx := t.Context()
		if _, err := db.Pool.Exec(ctx, `
			INSERT INTO index_generations (generation, model, dims, chunk_size, chunk_overlap, chunk_unit, status)
			VALUES (3, 'other', $1, 512, 64, 'tokens', 'building')`, genDims); err != nil {
			t.Fatal(err)
		}
		third, err := vectorstore.OpenGeneration(ctx, db.Pool, 3, genDims)
		if err != nil {
			t.Fatal(err)
		}
		x, y := []float32{1, 0, 0, 0}, []float32{0, 1, 0, 0}
		if _, err := third.Upsert(ctx, db.Pool, []vectorstore.Record{rec("a", 0, 2, "h0", y), rec("a", 1, 2, "g3", y), rec("b", 0, 1, "h0", y)}); err != nil {
			t.Fatal(err)
		}
		out, err := second.Upsert(ctx, db.Pool, []vectorstore.Record{rec("a", 0, 2, "h0", x), rec("a", 1, 2, "h1", x)})
		if err != nil {
			t.Fatal(err)
		}
		if want := []vectorstore.Outcome{vectorstore.Inserted, vectorstore.Inserted}; !equalOutcomes(out, want) {
			t.Errorf("generation 2's first upsert beside generation 3's rows: %v, want %v", out, want)
		}
		hits, err := second.Search(ctx, db.Pool, x, vectorstore.SearchOptions{K: 10})
		if err != nil {
			t.Fatal(err)
		}
		if len(hits) != 2 || hits[0].Score < 0.999 || hits[1].Score < 0.999 {
			t.Errorf("generation 2's search: %+v, want only its 2 chunks, both aligned with the query", hits)
		}
		if n, err := second.PruneVersion(ctx, db.Pool, "a", 1); err != nil || n != 1 {
			t.Errorf("prune a to 1 chunk in generation 2: %d rows, %v; want its 1", n, err)
		}
		if n, err := vectorstore.DropGeneration(ctx, db.Pool, 2); err != nil || n != 1 {
			t.Errorf("drop generation 2: %d rows, %v; want its 1", n, err)
		}
		if counts, _ := vectorstore.GenerationVectors(ctx, db.Pool); counts[3] != 3 {
			t.Errorf("generation 3 kept %d vectors, want its 3", counts[3])
		}
	})
}

// Erasing a document removes its vectors from every generation at once.
func TestEraseDocumentsErasesEveryGeneration(t *testing.T) {
	t.Parallel()
	first, second, db := openGenerations(t, testenv.DefaultBackend)
	ctx := t.Context()
	if _, err := first.Upsert(ctx, db.Pool, []vectorstore.Record{rec("a", 0, 2, "h0", []float32{1, 0, 0, 0, 0, 0, 0, 0})}); err != nil {
		t.Fatal(err)
	}
	if _, err := second.Upsert(ctx, db.Pool, []vectorstore.Record{rec("a", 0, 2, "h0", []float32{1, 0, 0, 0}), rec("a", 1, 2, "h1", []float32{0, 1, 0, 0}),
		rec("b", 0, 1, "h0", []float32{0, 1, 0, 0})}); err != nil {
		t.Fatal(err)
	}
	erased, err := vectorstore.EraseDocuments(ctx, db.Pool, []string{"a"})
	if err != nil {
		t.Fatal(err)
	}
	if got := erased["a"]; got.Vectors != 1 || got.Generations != 2 {
		t.Errorf("erased %+v of a, want 1 vector of generation 1 and 2 of later generations", got)
	}
	if counts, _ := vectorstore.GenerationVectors(ctx, db.Pool); counts[1] != 0 || counts[2] != 1 {
		t.Errorf("left %v, want only b's vector in generation 2", counts)
	}
}

func equalOutcomes(a, b []vectorstore.Outcome) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
