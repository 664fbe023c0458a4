package vectorstore_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/sluicehq/sluice/internal/dev/testenv"
	"github.com/sluicehq/sluice/pkg/vectorstore"
)

// indexFixture is a bulk load of fixed pseudo-random vectors: docs ready
// documents of chunks chunks each, and queries drawn from the same source.
type indexFixture struct {
	store   *vectorstore.Postgres
	db      *testenv.Database
	queries [][]float32
}

const (
	indexDims    = 32
	indexDocs    = 200
	indexChunks  = 10 // 2,000 vectors in all
	indexQueries = 8
)

func newIndexFixture(t *testing.T) *indexFixture {
	t.Helper()
	ctx := t.Context()
	store, db := openStore(t, testenv.PgvectorBackend, indexDims)
	rng := rand.New(rand.NewPCG(20261130, 1))
	randomVector := func() []float32 {
		v := make([]float32, indexDims)
		for i := range v {
			v[i] = float32(rng.NormFloat64())
		}
		return v
	}
	docs := &pgx.Batch{}
	var recs []vectorstore.Record
	for d := range indexDocs {
		docID := fmt.Sprintf("doc-%03d", d)
		docs.Queue(`INSERT INTO documents (doc_id, source_id, source_native_id, version, content_hash, chunk_count, status)
			VALUES ($1, 'fixture', $1, 1, 'h', $2, 'ready')`, docID, indexChunks)
		for c := range indexChunks {
			recs = append(recs, vectorstore.Record{DocID: docID, ChunkIndex: c, Version: 1, ContentHash: fmt.Sprintf("h%d", c),
				Model: "fixture", Embedding: randomVector(), Text: fmt.Sprintf("%s/%d", docID, c)})
		}
		if len(recs) == 250 || d == indexDocs-1 {
			if _, err := store.Upsert(ctx, db.Pool, recs); err != nil {
				t.Fatalf("Upsert: %v", err)
			}
			recs = recs[:0]
		}
	}
	if err := db.Pool.SendBatch(ctx, docs).Close(); err != nil {
		t.Fatalf("insert documents: %v", err)
	}
	f := &indexFixture{store: store, db: db}
	for range indexQueries {
		f.queries = append(f.queries, randomVector())
	}
	return f
}

// search runs Search in a transaction whose session settings are set, and
// returns the hits' keys in order.
func (f *indexFixture) search(t *testing.T, query []float32, k int, settings ...string) []string {
	t.Helper()
	tx, err := f.db.Pool.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background())
	for _, s := range settings {
		if _, err := tx.Exec(t.Context(), "SET LOCAL "+s); err != nil {
			t.Fatalf("SET LOCAL %s: %v", s, err)
		}
	}
	hits, err := f.store.Search(t.Context(), tx, query, vectorstore.SearchOptions{K: k})
	if err != nil {
		t.Fatalf("Search: %v", err)
	}
	keys := make([]string, len(hits))
	for i, h := range hits {
		keys[i] = fmt.Sprintf("%s/%d", h.DocID, h.ChunkIndex)
	}
	return keys
}

// plan returns the EXPLAIN output of Search's own statement for query.
func (f *indexFixture) plan(t *testing.T, query []float32, k int) string {
	t.Helper()
	rows, err := f.db.Pool.Query(t.Context(), "EXPLAIN "+f.store.SearchSQL(), query, "", k)
	if err != nil {
		t.Fatalf("EXPLAIN search: %v", err)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatalf("EXPLAIN search: %v", err)
	}
	return strings.Join(lines, "\n")
}

const hnswScan = "Index Scan using " + vectorstore.HNSWIndex

// After a bulk load, BuildIndex gives Search an HNSW index scan that finds
// the same top 10 as the exact scan did before the index existed.
func TestBuildIndexServesSearch(t *testing.T) {
	t.Parallel()
	f := newIndexFixture(t)
	exact := make([][]string, len(f.queries))
	for i, q := range f.queries {
		if plan := f.plan(t, q, 10); strings.Contains(plan, hnswScan) {
			t.Fatalf("the exact scan used the index before BuildIndex:\n%s", plan)
		}
		exact[i] = f.search(t, q, 100)
	}
	if err := f.store.BuildIndex(t.Context(), f.db.Pool); err != nil {
		t.Fatalf("BuildIndex: %v", err)
	}
	if err := f.store.BuildIndex(t.Context(), f.db.Pool); err != nil {
		t.Fatalf("BuildIndex a second time: %v", err)
	}
	if plan := f.plan(t, f.queries[0], 10); !strings.Contains(plan, hnswScan) {
		t.Fatalf("Search does not use the HNSW index after BuildIndex:\n%s", plan)
	}

	t.Run("Top10", func(t *testing.T) {
		// ef_search 200 (a tenth of the rows) makes recall 100%; at the
		// default 40 it measured 98.5-99% on this fixture.
		for i, q := range f.queries {
			if got := f.search(t, q, 10, "hnsw.ef_search = 200"); !slices.Equal(got, exact[i][:10]) {
				t.Errorf("query %d through the index: %v\nexact scan: %v", i, got, exact[i][:10])
			}
		}
	})
	t.Run("MoreThanEfSearch", func(t *testing.T) {
		// An index scan stops at ef_search rows (40 by default) unless
		// iterative scans go on: with them K=100 is answered in full.
		found := 0
		for i, q := range f.queries {
			got := f.search(t, q, 100, "hnsw.iterative_scan = strict_order")
			if len(got) != 100 {
				t.Fatalf("query %d: %d hits with iterative scans, want 100", i, len(got))
			}
			for _, key := range got {
				if slices.Contains(exact[i], key) {
					found++
				}
			}
		}
		// Measured 98.6-98.8% on this fixture; ef_search stays at 40 here.
		if recall := float64(found) / float64(100*len(f.queries)); recall < 0.95 {
			t.Errorf("recall@100 with iterative scans %.3f, want ≥ 0.95", recall)
		}
	})
}

// Without pgvector there is no index to build, and BuildIndex says so.
func TestBuildIndexWithoutPgvector(t *testing.T) {
	t.Parallel()
	store, db := openStore(t, testenv.DefaultBackend, testDims)
	err := store.BuildIndex(t.Context(), db.Pool)
	if store.Mode() == vectorstore.ModeVector { // DATABASE_URL may name a server with pgvector
		if err != nil {
			t.Fatalf("BuildIndex with pgvector: %v", err)
		}
		return
	}
	if !errors.Is(err, vectorstore.ErrNoVectorIndex) {
		t.Fatalf("BuildIndex on real[]: %v, want ErrNoVectorIndex", err)
	}
	if !strings.Contains(err.Error(), "install pgvector") {
		t.Errorf("BuildIndex error %q does not say how to get an index", err)
	}
}
