package vectorstore_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/dev/testenv"
	"github.com/sluicehq/sluice/pkg/vectorstore"
	"github.com/sluicehq/sluice/pkg/vectorstore/storetest"
)

func TestMain(m *testing.M) { testenv.Main(m) }

const testDims = 8

// TestPostgres runs the conformance suite on both backends: real pgvector
// (a vector(N) column) and PostgreSQL without it (real[]).
func TestPostgres(t *testing.T) {
	t.Parallel()
	testenv.ForEachBackend(t, func(t *testing.T, backend testenv.Backend) {
		storetest.Run(t, func(t *testing.T) (vectorstore.Store, vectorstore.DB) {
			store, db := openStore(t, backend, testDims)
			return store, db.Pool
		})
	})
}

// openStore opens the store on a fresh database of backend migrated for
// dims. On pgvector the store must be in vector mode: anything else means
// the extension was not there and the test would prove nothing about it.
func openStore(t testing.TB, backend testenv.Backend, dims int) (*vectorstore.Postgres, *testenv.Database) {
	t.Helper()
	db := testenv.NewDatabase(t, testenv.WithDims(dims), testenv.OnBackend(backend))
	store, err := vectorstore.Open(context.Background(), db.Pool, dims)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	if backend == testenv.PgvectorBackend && store.Mode() != vectorstore.ModeVector {
		t.Fatalf("Open on the pgvector backend gave mode %q, want %q", store.Mode(), vectorstore.ModeVector)
	}
	return store, db
}

func TestOpenMode(t *testing.T) {
	t.Parallel()
	testenv.ForEachBackend(t, func(t *testing.T, backend testenv.Backend) {
		store, db := openStore(t, backend, testDims)
		var want string
		if err := db.Pool.QueryRow(t.Context(), `SELECT value FROM sluice_settings WHERE key = 'vector_type'`).Scan(&want); err != nil {
			t.Fatal(err)
		}
		if store.Mode() != want || store.Dims() != testDims {
			t.Errorf("Open gave mode %q, dims %d; the database says %q, %d", store.Mode(), store.Dims(), want, testDims)
		}
	})
}

func TestOpenDimsMismatch(t *testing.T) {
	t.Parallel()
	db := testenv.NewDatabase(t, testenv.WithDims(testDims))
	for _, dims := range []int{768, testDims - 1, 0} {
		_, err := vectorstore.Open(t.Context(), db.Pool, dims)
		if !errors.Is(err, vectorstore.ErrDimsMismatch) {
			t.Fatalf("Open(%d) on a %d-dimension database: %v, want ErrDimsMismatch", dims, testDims, err)
		}
		fix := fmt.Sprintf("EMBEDDING_DIMS=%d but the database was migrated for %d: migrate a new database or set EMBEDDING_DIMS=%d", dims, testDims, testDims)
		if !strings.Contains(err.Error(), fix) {
			t.Errorf("Open(%d) error %q does not say %q", dims, err, fix)
		}
	}
}

func TestOpenRefusesUnmigratedOrUnknown(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		mutate  string
		wantErr error
		wantMsg string
	}{
		{"NoSettings", `DELETE FROM sluice_settings`, vectorstore.ErrNotMigrated, "sluice migrate"},
		{"NoSettingsTable", `DROP TABLE sluice_settings`, vectorstore.ErrNotMigrated, "sluice migrate"},
		{"UnknownVectorType", `UPDATE sluice_settings SET value = 'halfvec' WHERE key = 'vector_type'`, nil, `"halfvec"`},
		{"DamagedDims", `UPDATE sluice_settings SET value = 'eight' WHERE key = 'embedding_dims'`, nil, `"eight"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			db := testenv.NewDatabase(t, testenv.WithDims(testDims))
			if _, err := db.Pool.Exec(t.Context(), c.mutate); err != nil {
				t.Fatal(err)
			}
			_, err := vectorstore.Open(t.Context(), db.Pool, testDims)
			if err == nil {
				t.Fatal("Open succeeded")
			}
			if c.wantErr != nil && !errors.Is(err, c.wantErr) {
				t.Errorf("Open: %v, want %v", err, c.wantErr)
			}
			if !strings.Contains(err.Error(), c.wantMsg) {
				t.Errorf("Open error %q does not mention %s", err, c.wantMsg)
			}
		})
	}
}

func BenchmarkUpsert(b *testing.B) {
	const dims, batchSize = 384, 64
	db := testenv.NewDatabase(b, testenv.WithDims(dims))
	ctx := context.Background()
	store, err := vectorstore.Open(ctx, db.Pool, dims)
	if err != nil {
		b.Fatal(err)
	}
	recs := make([]vectorstore.Record, batchSize)
	for i := range recs {
		emb := make([]float32, dims)
		for j := range emb {
			emb[j] = float32((i*dims+j)%97) / 97
		}
		recs[i] = vectorstore.Record{
			ChunkIndex:  i,
			Version:     1,
			ContentHash: fmt.Sprintf("sha256:%064d", i),
			Model:       "bench-model",
			Embedding:   emb,
			Text:        strings.Repeat("lorem ipsum dolor sit amet ", 40),
			Metadata:    []byte(`{"source": "bench", "lang": "en"}`),
		}
	}
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		doc := fmt.Sprintf("bench-%d", n)
		n++
		for i := range recs {
			recs[i].DocID = doc
		}
		out, err := store.Upsert(ctx, db.Pool, recs)
		if err != nil {
			b.Fatal(err)
		}
		if out[batchSize-1] != vectorstore.Inserted {
			b.Fatalf("outcome %v, want inserted", out[batchSize-1])
		}
	}
	b.ReportMetric(float64(n*batchSize)/b.Elapsed().Seconds(), "rows/s")
}
