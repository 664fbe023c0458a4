package erase_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluicehq/sluice/internal/dev/testenv"
	"github.com/sluicehq/sluice/internal/store/deadletter"
	"github.com/sluicehq/sluice/internal/store/erase"
	"github.com/sluicehq/sluice/internal/store/generation"
	"github.com/sluicehq/sluice/internal/store/manifest"
	"github.com/sluicehq/sluice/migrations"
	"github.com/sluicehq/sluice/pkg/messages"
	"github.com/sluicehq/sluice/pkg/outbox"
	"github.com/sluicehq/sluice/pkg/vectorstore"
)

func TestMain(m *testing.M) { testenv.Main(m) }

const (
	dims   = 8
	source = "src"
	secret = "the deleted document's words"
)

type testBundle struct {
	ctx     context.Context
	pool    *pgxpool.Pool
	store   *vectorstore.Postgres
	metrics *erase.Metrics
	reg     *prometheus.Registry
	// operator is the pool of the role sluice docs delete runs as.
	operator *pgxpool.Pool
	// later are the stores of two later index generations, of other
	// dimensions than the first: a document's vectors are in each.
	later []*vectorstore.Postgres
}

// laterDims are the dimensions of the later generations setup creates.
var laterDims = []int{4, 6}

func setup(t *testing.T) *testBundle {
	t.Helper()
	db := testenv.NewDatabase(t, testenv.WithDims(dims))
	ctx := context.Background()
	store, err := vectorstore.Open(ctx, db.Pool, dims)
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	b := &testBundle{ctx: ctx, pool: db.Pool, store: store, metrics: erase.NewMetrics(reg), reg: reg, operator: db.RolePool(t, migrations.OperatorRole)}
	for _, d := range laterDims {
		ch, err := generation.New(b.operator).Create(ctx, generation.Spec{Model: "m", Dims: d, Chunking: generation.Chunking{Size: 100, Overlap: 10, Unit: "chars"}},
			generation.Request{By: "test", Reason: "a later generation", Execute: true})
		if err != nil {
			t.Fatal(err)
		}
		s, err := vectorstore.OpenGeneration(ctx, db.Pool, ch.Generation, d)
		if err != nil {
			t.Fatal(err)
		}
		b.later = append(b.later, s)
	}
	return b
}

// seed records native id n of the source at version 1, ready, with two
// stored chunks, a parked third whose dead letter holds its job (in
// dead_letters and by reference), escalated text, and a retained
// previous row: every place a document's text can be.
func (b *testBundle) seed(t *testing.T, n string) string {
	t.Helper()
	id := messages.DocID(source, n)
	err := pgx.BeginFunc(b.ctx, b.pool, func(tx pgx.Tx) error {
		d := manifest.Documents{DocIDs: []string{id}, NativeIDs: []string{n}, Hashes: []string{"h1"}, Statuses: []string{string(manifest.DocReady)},
			Codecs: []string{""}, Metadata: []string{`{"title":"` + secret + `"}`}, Versions: []int64{1}, ChunkCounts: []int32{3}}
		if err := manifest.RecordDocuments(b.ctx, tx, source, "run-1", d); err != nil {
			return err
		}
		c := manifest.MakeChunks(3)
		for i := range 3 {
			c.Add(id, i, 1)
		}
		job := []byte(`{"text":"` + secret + `"}`)
		if err := manifest.RecordPending(b.ctx, tx, "run-1", c, []string{"a", "b", "c"}, [][]byte{job, job, job}); err != nil {
			return err
		}
		if _, err := b.store.Upsert(b.ctx, tx, []vectorstore.Record{b.record(id, 0, 1), b.record(id, 1, 1)}); err != nil {
			return err
		}
		for _, s := range b.later {
			if _, err := s.Upsert(b.ctx, tx, []vectorstore.Record{b.recordOf(s, id, 0, 1), b.recordOf(s, id, 1, 1)}); err != nil {
				return err
			}
		}
		if err := b.store.Retain(b.ctx, tx, []string{id}, []int32{0}); err != nil {
			return err
		}
		if err := manifest.KeepEscalatedText(b.ctx, tx, []manifest.Escalated{{DocID: id, Index: 2, Version: 1, Rule: "r", Text: secret}}); err != nil {
			return err
		}
		if err := deadletter.Write(b.ctx, tx, []messages.DeadLetter{b.deadLetter(id, 1)}); err != nil {
			return err
		}
		// A row written before dead letters left their payload behind:
		// a whole dead letter, as the outbox takes only those.
		dl := b.deadLetter(id, 1)
		body, err := dl.Encode()
		if err != nil {
			return err
		}
		_, err = outbox.Write(b.ctx, tx, outbox.Message{Subject: "dlq.quarantine." + source, Payload: body})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := deadletter.Record(b.ctx, b.pool, b.deadLetter(id, 1), 1); err != nil {
		t.Fatal(err)
	}
	return id
}

func (b *testBundle) record(id string, index int, version int64) vectorstore.Record {
	return b.recordOf(b.store, id, index, version)
}

// recordOf is a record of the chunk for store's generation.
func (b *testBundle) recordOf(store *vectorstore.Postgres, id string, index int, version int64) vectorstore.Record {
	v := make([]float32, store.Dims())
	v[index%store.Dims()] = 1
	return vectorstore.Record{DocID: id, ChunkIndex: index, Version: version, ContentHash: "h", Model: "m", Embedding: v, Text: secret}
}

func (b *testBundle) deadLetter(id string, version int64) messages.DeadLetter {
	return messages.DeadLetter{Schema: messages.DeadLetterSchema, DeadLetterID: messages.DeadLetterID(id, 2), DocID: id, ChunkIndex: 2,
		DocVersion: version, SourceID: source, SourceNativeID: "n", Disposition: messages.DispositionQuarantine, ErrorClass: "bad_request",
		Stage: "embed", Attempts: 1, FailedAt: time.Now(), Payload: []byte(`{"text":"` + secret + `"}`)}
}

// texts counts the rows anywhere in PostgreSQL that hold the secret.
func (b *testBundle) texts(t *testing.T) int {
	t.Helper()
	var n int
	if err := b.pool.QueryRow(b.ctx, `
		SELECT (SELECT count(*) FROM chunk_embeddings WHERE text LIKE '%'||$1||'%')
		     + (SELECT count(*) FROM chunk_embeddings_previous WHERE text LIKE '%'||$1||'%')
		     + (SELECT count(*) FROM generation_embeddings WHERE text LIKE '%'||$1||'%')
		     + (SELECT count(*) FROM ingest_manifest WHERE position(convert_to($1, 'UTF8') in coalesce(job, '')) > 0)
		     + (SELECT count(*) FROM escalated_chunks WHERE text LIKE '%'||$1||'%')
		     + (SELECT count(*) FROM dead_letters WHERE position(convert_to($1, 'UTF8') in coalesce(payload, '')) > 0)
		     + (SELECT count(*) FROM dead_letter_payloads WHERE position(convert_to($1, 'UTF8') in payload) > 0)
		     + (SELECT count(*) FROM outbox WHERE payload::text LIKE '%'||$1||'%'
		                OR position(convert_to($1, 'UTF8') in decode(coalesce(payload->>'payload', ''), 'base64')) > 0)
		     + (SELECT count(*) FROM documents WHERE metadata::text LIKE '%'||$1||'%')`, secret).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// deletedTotal reads sluice_documents_deleted_total{source} as scraped.
func (b *testBundle) deletedTotal(t *testing.T) float64 {
	t.Helper()
	families, err := b.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "sluice_documents_deleted_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "source" && l.GetValue() == source {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

func (b *testBundle) deleteDocs(t *testing.T, execute bool, ids ...string) erase.Result {
	t.Helper()
	res, err := erase.New(b.operator, b.metrics).Delete(b.ctx, erase.Request{SourceID: source, DocIDs: ids, By: "cli:alice", Reason: "gone at the source", Execute: execute})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// A delete's one transaction leaves no row holding the document's text,
// resolves its dead letter as deleted, keeps the counts and an audit,
// and a dry run changes nothing but the audit.
func TestDeleteErasesEveryCopyInOneTransaction(t *testing.T) {
	t.Parallel()
	b := setup(t)
	id := b.seed(t, "a.txt")
	if n := b.texts(t); n < 11 {
		t.Fatalf("seeded %d rows with the text, want every place, every generation's vectors too (11 or more)", n)
	}
	dry := b.deleteDocs(t, false, id)
	if !dry.DryRun || len(dry.Selected) != 1 || len(dry.Deleted) != 0 {
		t.Fatalf("dry run = %+v", dry)
	}
	if n := b.texts(t); n < 11 {
		t.Fatalf("a dry run erased text: %d rows left", n)
	}
	res := b.deleteDocs(t, true, id)
	if len(res.Deleted) != 1 {
		t.Fatalf("deleted %+v", res)
	}
	d := res.Deleted[0]
	if d.Version != 2 || d.Vectors != 6 || d.TextRows < 1 || d.Jobs != 3 || d.Payloads < 2 || d.DeadLetters != 1 {
		t.Errorf("erased %+v, want version 2, 6 vectors (2 in each of 3 generations), the escalated text, 3 jobs, 2 payloads, 1 dead letter", d)
	}
	if n := b.texts(t); n != 0 {
		t.Errorf("%d rows still hold the deleted text", n)
	}
	var resolution string
	if err := b.pool.QueryRow(b.ctx, `SELECT resolution FROM dead_letters WHERE doc_id = $1 AND resolved_at IS NOT NULL`, id).Scan(&resolution); err != nil || resolution != deadletter.ResolutionDeleted {
		t.Errorf("dead letter resolution %q (%v), want deleted", resolution, err)
	}
	shown, err := erase.Show(b.ctx, b.pool, id)
	if err != nil {
		t.Fatal(err)
	}
	if shown.Status != string(manifest.DocDeleted) || len(shown.Deletes) != 1 || shown.Deletes[0].By != "cli:alice" ||
		shown.Deletes[0].Reason != "gone at the source" || shown.Left != (erase.Left{}) {
		t.Errorf("show = %+v", shown)
	}
	var requests int
	if err := b.pool.QueryRow(b.ctx, `SELECT count(*) FROM deletion_requests WHERE requested_by = 'cli:alice'`).Scan(&requests); err != nil || requests != 2 {
		t.Errorf("%d audited requests (%v), want the dry run and the delete", requests, err)
	}
	if leaks, err := erase.Check(b.ctx, b.pool); err != nil || len(leaks) != 0 {
		t.Errorf("check = %v, %v; want no leak", leaks, err)
	}
	again := b.deleteDocs(t, true, id)
	if len(again.AlreadyDeleted) != 1 || len(again.Deleted) != 0 {
		t.Errorf("deleting twice = %+v, want it already deleted", again)
	}
	if n := b.deletedTotal(t); n != 1 {
		t.Errorf("sluice_documents_deleted_total{source=%q} = %v, want 1 (the dry run and the second delete count nothing)", source, n)
	}
}

// A delete refuses an unknown id and a missing reason before writing
// anything.
func TestDeleteRefusesUnknownIDsAndMissingReasons(t *testing.T) {
	t.Parallel()
	b := setup(t)
	id := b.seed(t, "a.txt")
	e := erase.New(b.pool, nil)
	nope, gone := messages.DocID(source, "nope"), messages.DocID(source, "gone")
	_, err := e.Delete(b.ctx, erase.Request{SourceID: source, DocIDs: []string{id, nope, gone}, By: "cli:a", Reason: "r", Execute: true})
	if !errors.Is(err, erase.ErrUnknownDocument) {
		t.Errorf("unknown id: %v, want ErrUnknownDocument", err)
	}
	var unknown *erase.UnknownDocumentsError
	if !errors.As(err, &unknown) || len(unknown.DocIDs) != 2 || !slices.Contains(unknown.DocIDs, nope) || !slices.Contains(unknown.DocIDs, gone) {
		t.Errorf("unknown ids: %#v, want both %s and %s named", err, nope, gone)
	}
	if _, err := e.Delete(b.ctx, erase.Request{SourceID: source, DocIDs: []string{id}, By: "cli:a", Execute: true}); !errors.Is(err, erase.ErrNoReason) {
		t.Errorf("no reason: %v, want ErrNoReason", err)
	}
	if n := b.texts(t); n < 7 {
		t.Errorf("a refused delete erased text: %d rows left", n)
	}
}

// After a delete, nothing of an older version is written back: a
// vector of the deleted version, or even one at the tombstone's own
// version, is stale; its dead letter is neither written nor recorded.
// Re-adding the document later is a new version, stored as usual.
func TestNothingOlderThanTheTombstoneIsWrittenBack(t *testing.T) {
	t.Parallel()
	b := setup(t)
	id := b.seed(t, "a.txt")
	b.deleteDocs(t, true, id)
	for _, version := range []int64{1, 2} {
		out, err := b.store.Upsert(b.ctx, b.pool, []vectorstore.Record{b.record(id, 0, version)})
		if err != nil {
			t.Fatal(err)
		}
		if out[0] != vectorstore.Stale {
			t.Errorf("upsert of version %d after the delete: %s, want stale", version, out[0])
		}
	}
	outcome, _, err := deadletter.Record(b.ctx, b.pool, b.deadLetter(id, 1), 99)
	if err != nil {
		t.Fatal(err)
	}
	if outcome != deadletter.Skipped {
		t.Errorf("a dead letter of the deleted version was recorded: %s", outcome)
	}
	if err := pgx.BeginFunc(b.ctx, b.pool, func(tx pgx.Tx) error {
		return deadletter.Write(b.ctx, tx, []messages.DeadLetter{b.deadLetter(id, 1)})
	}); err != nil {
		t.Fatal(err)
	}
	if n := b.texts(t); n != 0 {
		t.Fatalf("%d rows hold the deleted text after late writes", n)
	}
	if leaks, err := erase.Check(b.ctx, b.pool); err != nil || len(leaks) != 0 {
		t.Errorf("check = %v, %v; want no leak", leaks, err)
	}

	// Re-added: a version past the tombstone.
	d := manifest.Documents{DocIDs: []string{id}, NativeIDs: []string{"a.txt"}, Hashes: []string{"h3"}, Statuses: []string{string(manifest.DocPending)},
		Codecs: []string{""}, Metadata: []string{"{}"}, Versions: []int64{3}, ChunkCounts: []int32{1}}
	if err := manifest.RecordDocuments(b.ctx, b.pool, source, "run-2", d); err != nil {
		t.Fatal(err)
	}
	out, err := b.store.Upsert(b.ctx, b.pool, []vectorstore.Record{b.record(id, 0, 3)})
	if err != nil || out[0] != vectorstore.Inserted {
		t.Errorf("upsert of the re-added version: %v, %v; want inserted", out, err)
	}
	if outcome, _, err := deadletter.Record(b.ctx, b.pool, b.deadLetter(id, 1), 100); err != nil || outcome != deadletter.Skipped {
		t.Errorf("a dead letter of the erased version after a re-add: %s, %v; want skipped", outcome, err)
	}
}

// Check names a deleted document that has data again (here a vector
// written by the store's owner behind the guard's back) and Redrive
// finishes its erasure.
func TestCheckFindsAnErasureLeakAndRedriveFinishesIt(t *testing.T) {
	t.Parallel()
	b := setup(t)
	id := b.seed(t, "a.txt")
	keep := b.seed(t, "b.txt")
	b.deleteDocs(t, true, id)
	// Behind the guard: as if the delete's transaction had been cut
	// short of its vector statement.
	if _, err := b.pool.Exec(b.ctx, `UPDATE documents SET status = 'ready' WHERE doc_id = $1`, id); err != nil {
		t.Fatal(err)
	}
	if _, err := b.store.Upsert(b.ctx, b.pool, []vectorstore.Record{b.record(id, 0, 5)}); err != nil {
		t.Fatal(err)
	}
	last := b.later[len(b.later)-1]
	if _, err := last.Upsert(b.ctx, b.pool, []vectorstore.Record{b.recordOf(last, id, 0, 5)}); err != nil {
		t.Fatal(err)
	}
	// And as if a replay had parked the scan again, keeping its bytes
	// and what OCR recognised in it.
	scan := []byte("a scan of a.txt")
	sum := sha256.Sum256(scan)
	ref := deadletter.FileRef{DeadLetterID: "dl-scan", DocID: id, SHA256: hex.EncodeToString(sum[:]), Recognised: "permit 4411"}
	if err := deadletter.KeepFile(b.ctx, b.pool, ref, scan); err != nil {
		t.Fatal(err)
	}
	if _, err := b.pool.Exec(b.ctx, `UPDATE documents SET status = 'deleted' WHERE doc_id = $1`, id); err != nil {
		t.Fatal(err)
	}
	leaks, err := erase.Check(b.ctx, b.pool)
	if err != nil {
		t.Fatal(err)
	}
	gen := fmt.Sprintf("%s%d", erase.GenerationLeakPrefix, last.Generation())
	if len(leaks) != 1 || leaks[0].DocID != id || leaks[0].Where["chunk_embeddings"] != 1 || leaks[0].Where[gen] != 1 ||
		leaks[0].Where["file_bytes_refs"] != 1 || !strings.Contains(leaks[0].String(), "1 in chunk_embeddings") ||
		!strings.Contains(leaks[0].String(), "1 in "+gen) || !strings.Contains(leaks[0].String(), "1 in file_bytes_refs") {
		t.Fatalf("check = %v, want %s with 1 vector in generation 1 and 1 in %s, and its kept scan", leaks, id, gen)
	}
	if n, err := erase.Redrive(b.ctx, b.pool, "reconcile", []string{id}); err != nil || n != 1 {
		t.Fatalf("redrive = %d, %v", n, err)
	}
	if leaks, err := erase.Check(b.ctx, b.pool); err != nil || len(leaks) != 0 {
		t.Errorf("after redrive check = %v, %v", leaks, err)
	}
	var kept int
	if err := b.pool.QueryRow(b.ctx, `SELECT count(*) FROM chunk_embeddings WHERE doc_id = $1`, keep).Scan(&kept); err != nil || kept != 2 {
		t.Errorf("the other document kept %d vectors (%v), want 2", kept, err)
	}
}
