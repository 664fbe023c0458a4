package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/sluicehq/sluice/pkg/vectorstore"
)

// vector returns a deterministic, non-zero vector that differs for every
// seed, with values that are not round in binary.
func vector(dims, seed int) []float32 {
	v := make([]float32, dims)
	for i := range v {
		v[i] = float32(math.Sin(float64(seed*dims+i+1))) / 3
	}
	return v
}

// axis returns the unit vector along dimension i plus a small weight w on
// dimension i+1, so that cosine similarities to axis(dims, i, 0) are known.
func axis(dims, i int, w float32) []float32 {
	v := make([]float32, dims)
	v[i] = 1
	v[(i+1)%dims] = w
	return v
}

// record returns a valid record whose vector is derived from its key and
// version, so that a row's embedding shows which record wrote it.
func (b *bundle) record(docID string, chunk int, version int64, hash string) vectorstore.Record {
	return vectorstore.Record{
		DocID:       docID,
		ChunkIndex:  chunk,
		Version:     version,
		ContentHash: hash,
		Model:       "test-model",
		Embedding:   vector(b.dims, int(version)*1000+chunk+len(docID)*7+len(hash)*13),
		Text:        fmt.Sprintf("%s chunk %d v%d %s", docID, chunk, version, hash),
		Metadata:    json.RawMessage(fmt.Sprintf(`{"chunk": %d}`, chunk)),
	}
}

func (b *bundle) upsert(t *testing.T, db vectorstore.DB, recs ...vectorstore.Record) []vectorstore.Outcome {
	t.Helper()
	out, err := b.store.Upsert(b.ctx, db, recs)
	if err != nil {
		t.Fatalf("Upsert: %v", err)
	}
	if len(out) != len(recs) {
		t.Fatalf("Upsert returned %d outcomes for %d records", len(out), len(recs))
	}
	return out
}

// row is a row of the store's table as stored.
type row struct {
	Version     int64
	ContentHash string
	Model       string
	Dims        int
	Embedding   []float32
	Text        string
	Metadata    map[string]any
	UpdatedAt   time.Time
}

// readRow reads a chunk straight from the table. embedding::real[] works for
// both column types, so the values compared are exactly those stored.
func (b *bundle) readRow(t *testing.T, docID string, chunk int) (row, bool) {
	t.Helper()
	var r row
	err := b.db.QueryRow(b.ctx, `
		SELECT version, content_hash, model, dims, embedding::real[], text, metadata, updated_at
		FROM `+b.rows()+` AND doc_id = $1 AND chunk_index = $2`, docID, chunk).
		Scan(&r.Version, &r.ContentHash, &r.Model, &r.Dims, &r.Embedding, &r.Text, &r.Metadata, &r.UpdatedAt)
	if err == pgx.ErrNoRows {
		return r, false
	}
	if err != nil {
		t.Fatalf("read chunk %s/%d: %v", docID, chunk, err)
	}
	return r, true
}

func (b *bundle) mustRow(t *testing.T, docID string, chunk int) row {
	t.Helper()
	r, ok := b.readRow(t, docID, chunk)
	if !ok {
		t.Fatalf("chunk %s/%d is not stored", docID, chunk)
	}
	return r
}

// assertStored checks that the row for rec holds exactly what rec carried.
func (b *bundle) assertStored(t *testing.T, rec vectorstore.Record) row {
	t.Helper()
	r := b.mustRow(t, rec.DocID, rec.ChunkIndex)
	if r.Version != rec.Version || r.ContentHash != rec.ContentHash || r.Text != rec.Text || r.Model != rec.Model {
		t.Errorf("chunk %s/%d stored (v%d, %q, %q, %q), want (v%d, %q, %q, %q)",
			rec.DocID, rec.ChunkIndex, r.Version, r.ContentHash, r.Model, r.Text,
			rec.Version, rec.ContentHash, rec.Model, rec.Text)
	}
	assertVector(t, r.Embedding, rec.Embedding)
	return r
}

func assertVector(t *testing.T, got, want []float32) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("stored vector has %d dimensions, want %d", len(got), len(want))
	}
	for i := range want {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("stored vector differs at %d: %g (bits %08x), want %g (bits %08x)",
				i, got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]))
		}
	}
}

func (b *bundle) countRows(t *testing.T, db vectorstore.DB) int {
	t.Helper()
	var n int
	if err := db.QueryRow(b.ctx, `SELECT count(*) FROM `+b.rows()).Scan(&n); err != nil {
		t.Fatalf("count %s: %v", b.features.Table, err)
	}
	return n
}

// document is a documents row; the store joins on it for search.
type document struct {
	DocID    string
	SourceID string
	Version  int64
	Status   string
	Chunks   int
}

func (b *bundle) insertDocuments(t *testing.T, docs ...document) {
	t.Helper()
	for _, d := range docs {
		_, err := b.db.Exec(b.ctx, `
			INSERT INTO documents (doc_id, source_id, source_native_id, version, content_hash, chunk_count, status)
			VALUES ($1, $2, $1, $3, 'hash-' || $1, $4, $5)`,
			d.DocID, d.SourceID, d.Version, d.Chunks, d.Status)
		if err != nil {
			t.Fatalf("insert document %s: %v", d.DocID, err)
		}
	}
}

// countingDB counts the statements the store sends, to hold it to its
// round-trip budget.
type countingDB struct {
	vectorstore.DB
	calls atomic.Int64
}

func (c *countingDB) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	c.calls.Add(1)
	return c.DB.Exec(ctx, sql, args...)
}

func (c *countingDB) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	c.calls.Add(1)
	return c.DB.Query(ctx, sql, args...)
}

func (c *countingDB) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	c.calls.Add(1)
	return c.DB.QueryRow(ctx, sql, args...)
}

func assertOutcomes(t *testing.T, got []vectorstore.Outcome, want ...vectorstore.Outcome) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("outcomes %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("outcomes %v, want %v (first difference at %d)", got, want, i)
		}
	}
}
