package vectorstore_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/testenv"
	"github.com/sluicehq/sluice/pkg/vectorstore"
	"github.com/sluicehq/sluice/pkg/vectorstore/storetest"
)

func TestMain(m *testing.M) { testenv.Main(m) }

const testDims = 8

func TestPostgres(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) (vectorstore.Store, vectorstore.DB) {
		db := testenv.NewDatabase(t, testenv.WithDims(testDims))
		store, err := vectorstore.Open(t.Context(), db.Pool, testDims)
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		return store, db.Pool
	})
}

// vectorShim stands in for pgvector where the server lacks it: a domain
// named vector over real[] (so the casts in the vector-mode statements
// resolve) and a <=> operator with pgvector's cosine distance, NaN for a zero
// vector included. The real extension runs the same suite in TestPostgres
// wherever it is installed (docker-compose's pgvector image); the shim keeps
// the vector-mode statements exercised everywhere else.
const vectorShim = `
CREATE DOMAIN vector AS real[];
CREATE FUNCTION shim_cosine_distance(a real[], b real[]) RETURNS float8
IMMUTABLE STRICT LANGUAGE sql AS $$
	SELECT CASE WHEN sum(x::float8 * x::float8) = 0 OR sum(y::float8 * y::float8) = 0 THEN 'NaN'::float8
	            ELSE 1 - sum(x::float8 * y::float8) / sqrt(sum(x::float8 * x::float8) * sum(y::float8 * y::float8)) END
	FROM unnest(a, b) AS u(x, y)
$$;
CREATE OPERATOR <=> (LEFTARG = real[], RIGHTARG = real[], FUNCTION = shim_cosine_distance);
UPDATE sluice_settings SET value = 'vector' WHERE key = 'vector_type';`

func TestPostgresVectorStatements(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) (vectorstore.Store, vectorstore.DB) {
		db := testenv.NewDatabase(t, testenv.WithDims(testDims))
		var mode string
		if err := db.Pool.QueryRow(t.Context(), `SELECT value FROM sluice_settings WHERE key = 'vector_type'`).Scan(&mode); err != nil {
			t.Fatal(err)
		}
		if mode == vectorstore.ModeVector {
			t.Skip("pgvector is installed: TestPostgres runs the vector-mode statements on the real extension")
		}
		if _, err := db.Pool.Exec(t.Context(), vectorShim); err != nil {
			t.Fatalf("install pgvector stand-in: %v", err)
		}
		store, err := vectorstore.Open(t.Context(), db.Pool, testDims)
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		if store.Mode() != vectorstore.ModeVector {
			t.Fatalf("Open on the stand-in gave mode %q, want %q", store.Mode(), vectorstore.ModeVector)
		}
		return store, db.Pool
	})
}

func TestOpenMode(t *testing.T) {
	t.Parallel()
	db := testenv.NewDatabase(t, testenv.WithDims(testDims))
	var want string
	if err := db.Pool.QueryRow(t.Context(), `SELECT value FROM sluice_settings WHERE key = 'vector_type'`).Scan(&want); err != nil {
		t.Fatal(err)
	}
	store, err := vectorstore.Open(t.Context(), db.Pool, testDims)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	if store.Mode() != want || store.Dims() != testDims {
		t.Errorf("Open gave mode %q, dims %d; the database says %q, %d", store.Mode(), store.Dims(), want, testDims)
	}
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
