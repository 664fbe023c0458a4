package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sync"
	"testing"

	"github.com/sluicehq/sluice/pkg/classify"
	"github.com/sluicehq/sluice/pkg/vectorstore"
)

func testRoundTrip(t *testing.T, b *bundle) {
	rec := b.record("doc-a", 0, 1, "h1")
	// Values that a text round trip or a float8 detour would alter.
	special := []float32{math.SmallestNonzeroFloat32, math.MaxFloat32, -1.0 / 3, 1e-38, -7.006492e-42, 0.1, float32(math.Pi), -0.5}
	copy(rec.Embedding, special)
	rec.Text = "Grüße, 世界 — \"quoted\" and 'single' \\ backslash\nnew line"
	rec.Metadata = json.RawMessage(`{"lang": "de", "tags": ["a", "b"], "n": 3}`)
	plain := b.record("doc-a", 1, 1, "h1")
	plain.Metadata = nil

	assertOutcomes(t, b.upsert(t, b.db, rec, plain), vectorstore.Inserted, vectorstore.Inserted)

	r := b.assertStored(t, rec)
	if r.Dims != b.dims {
		t.Errorf("dims column = %d, want %d", r.Dims, b.dims)
	}
	if r.Metadata["lang"] != "de" || r.Metadata["n"] != float64(3) || len(r.Metadata) != 3 {
		t.Errorf("metadata = %v, want the object given", r.Metadata)
	}
	if p := b.assertStored(t, plain); len(p.Metadata) != 0 || p.Metadata == nil {
		t.Errorf("metadata of a record without any = %v, want {}", p.Metadata)
	}
}

func testEmptyBatch(t *testing.T, b *bundle) {
	db := &countingDB{DB: b.db}
	out, err := b.store.Upsert(b.ctx, db, nil)
	if err != nil || out != nil {
		t.Fatalf("Upsert(nil) = %v, %v; want nil, nil", out, err)
	}
	if n := db.calls.Load(); n != 0 {
		t.Errorf("Upsert(nil) sent %d statements, want none", n)
	}
}

func testOutcomesInInputOrder(t *testing.T, b *bundle) {
	b.upsert(t, b.db, b.record("a", 0, 1, "h1"), b.record("a", 1, 2, "h1"), b.record("a", 2, 1, "h1"))

	db := &countingDB{DB: b.db}
	out := b.upsert(t, db,
		b.record("x", 0, 1, "h1"), // new chunk
		b.record("a", 1, 1, "h1"), // older than stored v2
		b.record("a", 0, 1, "h1"), // as stored
		b.record("a", 2, 2, "h2"), // newer than stored v1
		b.record("x", 1, 1, "h1"), // new chunk
	)
	assertOutcomes(t, out, vectorstore.Inserted, vectorstore.Stale, vectorstore.Unchanged, vectorstore.Updated, vectorstore.Inserted)
	if n := db.calls.Load(); n < 1 || n > 2 {
		t.Errorf("Upsert of one batch sent %d statements, want 1 or 2", n)
	}
	if got := b.countRows(t, b.db); got != 5 {
		t.Errorf("%d rows stored, want 5", got)
	}
}

func testUnchanged(t *testing.T, b *bundle) {
	first := b.record("doc", 0, 3, "h")
	b.upsert(t, b.db, first)
	before := b.mustRow(t, "doc", 0)

	// Same version and hash: even a different vector and text must not be
	// written, since the pair is what identifies the content.
	again := first
	again.Embedding = vector(b.dims, 99)
	again.Text = "something else"
	assertOutcomes(t, b.upsert(t, b.db, again), vectorstore.Unchanged)
	assertOutcomes(t, b.upsert(t, b.db, first), vectorstore.Unchanged)

	after := b.assertStored(t, first)
	if !after.UpdatedAt.Equal(before.UpdatedAt) {
		t.Errorf("updated_at moved from %v to %v on a no-op upsert", before.UpdatedAt, after.UpdatedAt)
	}
}

func testNewerVersion(t *testing.T, b *bundle) {
	b.upsert(t, b.db, b.record("doc", 0, 1, "h1"))
	before := b.mustRow(t, "doc", 0)
	newer := b.record("doc", 0, 2, "h2")
	newer.Model = "test-model-2"
	assertOutcomes(t, b.upsert(t, b.db, newer), vectorstore.Updated)
	after := b.assertStored(t, newer)
	if !after.UpdatedAt.After(before.UpdatedAt) {
		t.Errorf("updated_at %v did not move past %v on an update", after.UpdatedAt, before.UpdatedAt)
	}
	// A newer version with the same content hash is still newer.
	newest := b.record("doc", 0, 3, "h2")
	assertOutcomes(t, b.upsert(t, b.db, newest), vectorstore.Updated)
	b.assertStored(t, newest)
}

func testOlderVersion(t *testing.T, b *bundle) {
	current := b.record("doc", 0, 3, "h3")
	b.upsert(t, b.db, current)
	before := b.mustRow(t, "doc", 0)

	assertOutcomes(t, b.upsert(t, b.db, b.record("doc", 0, 2, "h2"), b.record("doc", 1, 1, "h1")),
		vectorstore.Stale, vectorstore.Inserted)
	// The same hash at an older version is stale too, not unchanged.
	assertOutcomes(t, b.upsert(t, b.db, b.record("doc", 0, 1, "h3")), vectorstore.Stale)

	after := b.assertStored(t, current)
	if !after.UpdatedAt.Equal(before.UpdatedAt) {
		t.Errorf("updated_at moved from %v to %v on a stale upsert", before.UpdatedAt, after.UpdatedAt)
	}
}

func testChangedHash(t *testing.T, b *bundle) {
	b.upsert(t, b.db, b.record("doc", 0, 2, "h-old"))
	before := b.mustRow(t, "doc", 0)
	changed := b.record("doc", 0, 2, "h-new")
	assertOutcomes(t, b.upsert(t, b.db, changed), vectorstore.Updated)
	after := b.assertStored(t, changed)
	if !after.UpdatedAt.After(before.UpdatedAt) {
		t.Errorf("updated_at %v did not move past %v on an update", after.UpdatedAt, before.UpdatedAt)
	}
}

// assertRecordError checks that err names the record at index with a
// permanent error of the given class, and that nothing reached the database.
func (b *bundle) assertRecordError(t *testing.T, db *countingDB, err error, index int, class string) {
	t.Helper()
	re, ok := errors.AsType[*vectorstore.RecordError](err)
	if !ok {
		t.Fatalf("error %v (%T) is not a *vectorstore.RecordError", err, err)
	}
	if re.Index != index {
		t.Errorf("RecordError.Index = %d, want %d", re.Index, index)
	}
	if !errors.Is(err, classify.ErrPermanent) {
		t.Errorf("error %v does not match classify.ErrPermanent", err)
	}
	if d := classify.Classify(err); d.Disposition != classify.Quarantine || d.Class != class {
		t.Errorf("error %v classifies as %s/%s, want quarantine/%s", err, d.Disposition, d.Class, class)
	}
	if n := db.calls.Load(); n != 0 {
		t.Errorf("Upsert sent %d statements before rejecting the batch, want none", n)
	}
	if n := b.countRows(t, b.db); n != 0 {
		t.Errorf("%d rows stored from a rejected batch, want none", n)
	}
}

func testWrongDims(t *testing.T, b *bundle) {
	for _, dims := range []int{b.dims - 1, b.dims + 1, 0} {
		t.Run(fmt.Sprint(dims), func(t *testing.T) {
			bad := b.record("doc", 1, 1, "h")
			bad.Embedding = vector(dims, 1)
			db := &countingDB{DB: b.db}
			_, err := b.store.Upsert(b.ctx, db, []vectorstore.Record{b.record("doc", 0, 1, "h"), bad, b.record("doc", 2, 1, "h")})
			b.assertRecordError(t, db, err, 1, classify.ClassDimensionMismatch)
		})
	}
}

func testNonFinite(t *testing.T, b *bundle) {
	for _, v := range []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))} {
		t.Run(fmt.Sprint(v), func(t *testing.T) {
			bad := b.record("doc", 2, 1, "h")
			bad.Embedding[b.dims-1] = v
			db := &countingDB{DB: b.db}
			_, err := b.store.Upsert(b.ctx, db, []vectorstore.Record{b.record("doc", 0, 1, "h"), b.record("doc", 1, 1, "h"), bad})
			b.assertRecordError(t, db, err, 2, classify.ClassInvalidVector)
		})
	}
}

// testUnstorableFields covers values PostgreSQL itself would refuse, which
// would otherwise fail the whole batch with one data exception.
func testUnstorableFields(t *testing.T, b *bundle) {
	cases := []struct {
		name  string
		edit  func(*vectorstore.Record)
		class string
	}{
		{"NULInText", func(r *vectorstore.Record) { r.Text = "a\x00b" }, classify.ClassInvalidEncoding},
		{"InvalidUTF8Text", func(r *vectorstore.Record) { r.Text = "a\xffb" }, classify.ClassInvalidEncoding},
		{"NULInDocID", func(r *vectorstore.Record) { r.DocID = "d\x00" }, classify.ClassInvalidEncoding},
		{"MetadataNotObject", func(r *vectorstore.Record) { r.Metadata = json.RawMessage(`[1]`) }, classify.ClassInvalidMessage},
		{"MetadataInvalidJSON", func(r *vectorstore.Record) { r.Metadata = json.RawMessage(`{"a":`) }, classify.ClassInvalidMessage},
		{"MetadataEscapedNUL", func(r *vectorstore.Record) { r.Metadata = json.RawMessage(`{"a":"\u0000"}`) }, classify.ClassInvalidMessage},
		{"VersionZero", func(r *vectorstore.Record) { r.Version = 0 }, classify.ClassInvalidMessage},
		{"NegativeChunkIndex", func(r *vectorstore.Record) { r.ChunkIndex = -1 }, classify.ClassInvalidMessage},
		{"EmptyDocID", func(r *vectorstore.Record) { r.DocID = "" }, classify.ClassInvalidMessage},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			bad := b.record("doc", 1, 1, "h")
			c.edit(&bad)
			db := &countingDB{DB: b.db}
			_, err := b.store.Upsert(b.ctx, db, []vectorstore.Record{b.record("doc", 0, 1, "h"), bad})
			b.assertRecordError(t, db, err, 1, c.class)
		})
	}
	// An escaped backslash before u0000 is ordinary text, and jsonb takes it.
	ok := b.record("doc", 0, 1, "h")
	ok.Metadata = json.RawMessage(`{"path": "C:\\u0000"}`)
	b.upsert(t, b.db, ok)
	if got := b.mustRow(t, "doc", 0).Metadata["path"]; got != `C:\u0000` {
		t.Errorf("metadata path = %q, want %q", got, `C:\u0000`)
	}
}

func testDuplicateKey(t *testing.T, b *bundle) {
	_, err := b.store.Upsert(b.ctx, b.db, []vectorstore.Record{
		b.record("doc", 0, 1, "h"), b.record("doc", 1, 1, "h"), b.record("doc", 0, 2, "h2"),
	})
	if err == nil {
		t.Fatal("Upsert accepted a batch with chunk doc/0 twice")
	}
	if !errors.Is(err, vectorstore.ErrDuplicateRecord) {
		t.Errorf("error %v does not match ErrDuplicateRecord", err)
	}
	if de, ok := errors.AsType[*vectorstore.DuplicateError](err); !ok || de.First != 0 || de.Second != 2 {
		t.Errorf("error %#v, want a *DuplicateError for records 0 and 2", err)
	}
	if n := b.countRows(t, b.db); n != 0 {
		t.Errorf("%d rows stored from a rejected batch, want none", n)
	}
}

func testLargeBatch(t *testing.T, b *bundle) {
	recs := make([]vectorstore.Record, 500)
	for i := range recs {
		recs[i] = b.record(fmt.Sprintf("doc-%d", i%7), i, 1, "h")
	}
	db := &countingDB{DB: b.db}
	out := b.upsert(t, db, recs...)
	if n := db.calls.Load(); n != 1 {
		t.Errorf("Upsert of 500 new records sent %d statements, want 1", n)
	}
	for i, o := range out {
		if o != vectorstore.Inserted {
			t.Fatalf("record %d: %v, want inserted", i, o)
		}
	}
	if n := b.countRows(t, b.db); n != 500 {
		t.Fatalf("%d rows stored, want 500", n)
	}
	for _, i := range []int{0, 1, 249, 498, 499} {
		b.assertStored(t, recs[i])
	}
	// Replaying the batch changes nothing.
	for i, o := range b.upsert(t, b.db, recs...) {
		if o != vectorstore.Unchanged {
			t.Fatalf("replayed record %d: %v, want unchanged", i, o)
		}
	}
}

// testConcurrentBatches catches state shared between calls, such as a
// reused parameter buffer, leaking one batch's vectors into another's rows.
func testConcurrentBatches(t *testing.T, b *bundle) {
	const workers, rounds, size = 6, 5, 20
	var wg sync.WaitGroup
	errs := make(chan error, workers*rounds)
	all := make([][]vectorstore.Record, workers)
	for w := range workers {
		for r := range rounds {
			batch := make([]vectorstore.Record, size)
			for i := range batch {
				batch[i] = b.record(fmt.Sprintf("w%d-r%d", w, r), i, int64(w+1), "h")
			}
			all[w] = append(all[w], batch...)
		}
	}
	for w := range workers {
		wg.Go(func() {
			for r := range rounds {
				if _, err := b.store.Upsert(b.ctx, b.db, all[w][r*size:(r+1)*size]); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("concurrent Upsert: %v", err)
	}
	for w := range workers {
		for _, rec := range all[w] {
			b.assertStored(t, rec)
		}
	}
}

func testRollback(t *testing.T, b *bundle) {
	tx := b.begin(t)
	out := b.upsert(t, tx, b.record("doc", 0, 1, "h"), b.record("doc", 1, 1, "h"))
	assertOutcomes(t, out, vectorstore.Inserted, vectorstore.Inserted)
	if n := b.countRows(t, tx); n != 2 {
		t.Fatalf("%d rows visible inside the transaction, want 2", n)
	}
	if err := tx.Rollback(b.ctx); err != nil {
		t.Fatalf("rollback: %v", err)
	}
	if n := b.countRows(t, b.db); n != 0 {
		t.Errorf("%d rows left after rollback, want none", n)
	}
	// The same records then insert afresh: the rollback left no trace.
	assertOutcomes(t, b.upsert(t, b.db, b.record("doc", 0, 1, "h")), vectorstore.Inserted)
}

func testPrune(t *testing.T, b *bundle) {
	var recs []vectorstore.Record
	for _, doc := range []string{"a", "b"} {
		for i := range 6 {
			recs = append(recs, b.record(doc, i, 1, "h"))
		}
	}
	b.upsert(t, b.db, recs...)

	n, err := b.store.PruneVersion(b.ctx, b.db, "a", 3)
	if err != nil || n != 3 {
		t.Fatalf("PruneVersion(a, 3) = %d, %v; want 3, nil", n, err)
	}
	for i := range 6 {
		if _, ok := b.readRow(t, "a", i); ok != (i < 3) {
			t.Errorf("chunk a/%d stored = %v after pruning to 3", i, ok)
		}
		b.mustRow(t, "b", i)
	}
	if n, err := b.store.PruneVersion(b.ctx, b.db, "a", 3); err != nil || n != 0 {
		t.Errorf("second PruneVersion(a, 3) = %d, %v; want 0, nil", n, err)
	}
	if n, err := b.store.PruneVersion(b.ctx, b.db, "b", 0); err != nil || n != 6 {
		t.Errorf("PruneVersion(b, 0) = %d, %v; want 6, nil", n, err)
	}
	if n, err := b.store.PruneVersion(b.ctx, b.db, "missing", 0); err != nil || n != 0 {
		t.Errorf("PruneVersion(missing, 0) = %d, %v; want 0, nil", n, err)
	}
}
