package replay_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/sluicehq/sluice/internal/content/chunk"
	"github.com/sluicehq/sluice/internal/content/corpus"
	"github.com/sluicehq/sluice/internal/failure/replay"
	"github.com/sluicehq/sluice/internal/platform/broker"
	"github.com/sluicehq/sluice/pkg/messages"
)

// parkedChunk is one parked chunk to seed: its document, manifest row
// and dead letter, as the producer and triage leave them.
type parkedChunk struct {
	id, source, native, text string
	meta                     json.RawMessage
	disposition              string
	// docHash is the document's recorded content hash. Defaults to the
	// chunk's.
	docHash string
	// payload replaces the chunk job as the dead letter's payload.
	payload []byte
}

// seedParked seeds c and returns its chunk job.
func (b *testBundle) seedParked(t *testing.T, c parkedChunk) messages.ChunkJob {
	t.Helper()
	hash, err := messages.ContentHash(c.text, c.meta)
	if err != nil {
		t.Fatal(err)
	}
	job := messages.ChunkJob{Schema: messages.ChunkJobSchema, DocID: messages.DocID(c.source, c.native), DocVersion: 1, ChunkCount: 1,
		SourceID: c.source, SourceNativeID: c.native, RunID: "run-" + c.source, ContentHash: hash, Text: c.text, Metadata: c.meta,
		PublishedAt: time.Now().UTC()}
	raw, err := job.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if c.docHash == "" {
		c.docHash = hash
	}
	if c.payload == nil {
		c.payload = raw
	}
	if c.disposition == "" {
		c.disposition = q
	}
	b.outbox++
	b.exec(t, `INSERT INTO documents (doc_id, source_id, source_native_id, run_id, version, content_hash, chunk_count, status)
		VALUES ($1, $2, $3, $4, 1, $5, 1, 'failed')`, job.DocID, c.source, c.native, job.RunID, c.docHash)
	b.exec(t, `INSERT INTO ingest_manifest (doc_id, chunk_index, version, content_hash, status, attempts, last_error_class, run_id, job)
		VALUES ($1, 0, 1, $2, 'parked', 1, 'bad_request', $3, $4)`, job.DocID, hash, job.RunID, raw)
	b.exec(t, `INSERT INTO dead_letters (dead_letter_id, doc_id, chunk_index, version, source_id, source_native_id, run_id,
		    disposition, error_class, stage, attempts, payload, last_outbox_id, first_failed_at, last_failed_at)
		VALUES ($1, $2, 0, 1, $3, $4, $5, $6, 'bad_request', 'embed', 1, $7, $8, now(), now())`,
		c.id, job.DocID, c.source, c.native, job.RunID, c.disposition, c.payload, b.outbox)
	return job
}

// published returns the replay jobs INGEST holds for source.
func (b *testBundle) published(t *testing.T, source string) []messages.ChunkJob {
	t.Helper()
	ctx := context.Background()
	stream, err := b.js.Stream(ctx, broker.IngestStream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := stream.Info(ctx, jetstream.WithSubjectFilter(messages.ReplaySubject(source)))
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Subjects[messages.ReplaySubject(source)] == 0 {
		return nil
	}
	var out []messages.ChunkJob
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq; seq++ {
		msg, err := stream.GetMsg(ctx, seq)
		if err != nil || msg.Subject != messages.ReplaySubject(source) {
			continue
		}
		job, err := messages.DecodeChunkJob(msg.Data)
		if err != nil {
			t.Fatalf("published replay job: %v", err)
		}
		out = append(out, job)
	}
	return out
}

func (b *testBundle) manifestHash(t *testing.T, docID string) (string, messages.ChunkJob) {
	t.Helper()
	var hash string
	var raw []byte
	if err := b.db.Pool.QueryRow(context.Background(), `SELECT content_hash, job FROM ingest_manifest WHERE doc_id = $1`, docID).Scan(&hash, &raw); err != nil {
		t.Fatal(err)
	}
	job, err := messages.DecodeChunkJob(raw)
	if err != nil {
		t.Fatalf("manifest job: %v", err)
	}
	return hash, job
}

func ptr[T any](v T) *T { return &v }

// A dry run shows the diff and records it in replay_audit, and changes
// nothing else: no mark, no manifest change, nothing published.
func TestCorrectDryRunOnlyAudits(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	orig := b.seedParked(t, parkedChunk{id: "dl-dry", source: "c", native: "dry.txt", text: "line one\nline tw0\nline three\n",
		meta: json.RawMessage(`{"lang":"en"}`)})
	rep, err := replay.Correction{DeadLetterID: "dl-dry", Text: ptr("line one\nline two\nline three\n"),
		Metadata: ptr(json.RawMessage(`{"lang": "en", "fixed": true}`)), By: "cli:tester", Reason: "typo"}.DryRun(ctx, b.db.Pool)
	if err != nil {
		t.Fatal(err)
	}
	wantHash, _ := messages.ContentHash("line one\nline two\nline three\n", json.RawMessage(`{"fixed":true,"lang":"en"}`))
	if !rep.DryRun || rep.Diff.HashBefore != orig.ContentHash || rep.Diff.HashAfter != wantHash || rep.ReplayGen != 1 {
		t.Errorf("report %+v; want a dry run from %s to %s as generation 1", rep, orig.ContentHash, wantHash)
	}
	wantText := "--- before\n+++ after\n@@ -1,3 +1,3 @@\n line one\n-line tw0\n+line two\n line three\n"
	if rep.Diff.Text != wantText {
		t.Errorf("text diff\n%s\nwant\n%s", rep.Diff.Text, wantText)
	}
	if !strings.Contains(rep.Diff.Metadata, "+  \"fixed\": true,") {
		t.Errorf("metadata diff\n%s\nwant the added member", rep.Diff.Metadata)
	}
	var scope json.RawMessage
	var action, reason, by string
	var dry bool
	if err := b.db.Pool.QueryRow(ctx, `SELECT action, reason, requested_by, dry_run, scope FROM replay_audit WHERE replay_id = $1`, rep.ReplayID).
		Scan(&action, &reason, &by, &dry, &scope); err != nil {
		t.Fatal(err)
	}
	var recorded replay.CorrectionScope
	if err := json.Unmarshal(scope, &recorded); err != nil {
		t.Fatal(err)
	}
	if action != replay.ActionCorrect || reason != "typo" || by != "cli:tester" || !dry || recorded.Diff != rep.Diff || recorded.DeadLetterID != "dl-dry" {
		t.Errorf("audit row %s %q %s dry=%v scope %s; want the correction's dry run with its diff", action, reason, by, dry, scope)
	}
	if n := countRows(t, b, `SELECT count(*) FROM dead_letters WHERE replayed_at IS NOT NULL OR replay_id IS NOT NULL`); n != 0 {
		t.Errorf("a dry run marked %d dead letters", n)
	}
	if hash, _ := b.manifestHash(t, orig.DocID); hash != orig.ContentHash {
		t.Errorf("a dry run changed the manifest's content hash to %s", hash)
	}
	if jobs := b.published(t, "c"); len(jobs) != 0 {
		t.Errorf("a dry run published %d jobs", len(jobs))
	}
	entries, err := replay.ListAudit(ctx, b.db.Pool, replay.AuditFilter{Action: replay.ActionCorrect})
	if err != nil || len(entries) != 1 || entries[0].ReplayID != rep.ReplayID {
		t.Errorf("ListAudit action correct: %+v, %v; want the dry run", entries, err)
	}
}

// Execute publishes one job with the corrected text and a content hash
// that matches it, keeps the chunk's identity, follows the correction in
// the manifest, and marks the dead letter: the same correction again
// dispatches nothing.
func TestCorrectExecutePublishesOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	orig := b.seedParked(t, parkedChunk{id: "dl-run", source: "c", native: "run.txt", text: "garbled \x01 text"})
	corr := replay.Correction{DeadLetterID: "dl-run", Text: ptr("clean text"), By: "cli:tester", Reason: "strip control bytes"}
	rep, err := corr.Execute(ctx, b.db.Pool, b.js)
	if err != nil || !rep.Dispatched || rep.DryRun {
		t.Fatalf("execute: %+v, %v", rep, err)
	}
	jobs := b.published(t, "c")
	if len(jobs) != 1 {
		t.Fatalf("%d jobs published, want 1", len(jobs))
	}
	j := jobs[0]
	wantHash, _ := messages.ContentHash("clean text", nil)
	if j.Text != "clean text" || j.ContentHash != wantHash || j.ReplayGen != 1 || j.DeadLetterID != "dl-run" || j.ReplayID != rep.ReplayID ||
		j.DocID != orig.DocID || j.ChunkIndex != 0 || j.DocVersion != 1 || j.SourceID != "c" || j.RunID != orig.RunID {
		t.Errorf("published %+v; want the corrected text, hash %s, generation 1, replay %s, same chunk and run", j, wantHash, rep.ReplayID)
	}
	if hash, job := b.manifestHash(t, orig.DocID); hash != wantHash || job.Text != "clean text" || job.ReplayGen != 0 {
		t.Errorf("manifest hash %s job text %q gen %d; want the correction's hash and job", hash, job.Text, job.ReplayGen)
	}
	if n := countRows(t, b, `SELECT count(*) FROM dead_letters WHERE dead_letter_id = 'dl-run' AND replay_id = $1 AND replayed_at IS NOT NULL`, rep.ReplayID); n != 1 {
		t.Error("the dead letter is not marked by the correction")
	}
	if n := countRows(t, b, `SELECT count(*) FROM replay_audit WHERE replay_id = $1 AND action = 'correct' AND NOT dry_run AND selected = 1 AND dispatched = 1`, rep.ReplayID); n != 1 {
		t.Error("no audit row with one dispatched for the correction")
	}
	if _, err := corr.Execute(ctx, b.db.Pool, b.js); !errors.Is(err, replay.ErrInFlight) {
		t.Errorf("second execute: %v; want ErrInFlight", err)
	}
	if jobs := b.published(t, "c"); len(jobs) != 1 {
		t.Errorf("%d jobs published after the second execute, want still 1", len(jobs))
	}
}

// A correction whose job could not be published leaves the dead letter
// unmarked and the manifest as it was, so it can be run again.
func TestCorrectUndoesOnDispatchFailure(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	orig := b.seedParked(t, parkedChunk{id: "dl-lost", source: "c", native: "lost.txt", text: "before"})
	if err := b.js.DeleteStream(ctx, broker.IngestStream); err != nil {
		t.Fatal(err)
	}
	rep, err := replay.Correction{DeadLetterID: "dl-lost", Text: ptr("after"), By: "cli:tester", Reason: "fix"}.Execute(ctx, b.db.Pool, b.js)
	if err == nil || rep == nil || rep.Dispatched {
		t.Fatalf("execute without INGEST: %+v, %v; want an error", rep, err)
	}
	if n := countRows(t, b, `SELECT count(*) FROM dead_letters WHERE replayed_at IS NOT NULL OR replay_id IS NOT NULL`); n != 0 {
		t.Error("the dead letter stayed marked after the dispatch failed")
	}
	if hash, job := b.manifestHash(t, orig.DocID); hash != orig.ContentHash || job.Text != "before" {
		t.Errorf("manifest hash %s text %q after the dispatch failed; want the original back", hash, job.Text)
	}
	if n := countRows(t, b, `SELECT count(*) FROM replay_audit WHERE replay_id = $1 AND dispatched = 0`, rep.ReplayID); n != 1 {
		t.Error("the audit row does not say nothing was dispatched")
	}
}

// Escalations, resolved dead letters, payloads that are not chunk jobs,
// and corrections that are not well formed are refused, each with its
// own error, and change nothing.
func TestCorrectRefuses(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.seedParked(t, parkedChunk{id: "dl-esc", source: "r", native: "esc.txt", text: "[redacted: pan]", disposition: messages.DispositionEscalate})
	b.seedParked(t, parkedChunk{id: "dl-held", source: "r", native: "held.txt", text: "[redacted: pan]"})
	b.exec(t, `INSERT INTO escalated_chunks (doc_id, chunk_index, version, rule, text) VALUES ($1, 0, 1, 'pan', 'x')`, messages.DocID("r", "held.txt"))
	b.seedParked(t, parkedChunk{id: "dl-done", source: "r", native: "done.txt", text: "stored since"})
	b.exec(t, `UPDATE dead_letters SET resolved_at = now() WHERE dead_letter_id = 'dl-done'`)
	b.seedParked(t, parkedChunk{id: "dl-doc", source: "r", native: "doc.txt", text: "x", payload: []byte(`{"source_native_id":"doc.txt","bytes":9,"status":"undecodable"}`)})
	b.seedParked(t, parkedChunk{id: "dl-ok", source: "r", native: "ok.txt", text: "same"})
	b.seedParked(t, parkedChunk{id: "dl-new", source: "r", native: "new.txt", text: "old version"})
	b.exec(t, `UPDATE ingest_manifest SET version = 2, status = 'pending' WHERE doc_id = $1`, messages.DocID("r", "new.txt"))
	huge := strings.Repeat("x", messages.MaxMessageBytes)
	for _, tc := range []struct {
		name string
		c    replay.Correction
		want error
	}{
		{"escalation", replay.Correction{DeadLetterID: "dl-esc", Text: ptr("a"), Reason: "r"}, replay.ErrEscalated},
		{"text held as an escalation", replay.Correction{DeadLetterID: "dl-held", Text: ptr("a"), Reason: "r"}, replay.ErrEscalated},
		{"resolved", replay.Correction{DeadLetterID: "dl-done", Text: ptr("a"), Reason: "r"}, replay.ErrResolved},
		{"not a chunk job", replay.Correction{DeadLetterID: "dl-doc", Text: ptr("a"), Reason: "r"}, replay.ErrNotChunkJob},
		{"unknown", replay.Correction{DeadLetterID: "dl-none", Text: ptr("a"), Reason: "r"}, replay.ErrNoDeadLetter},
		{"newer version", replay.Correction{DeadLetterID: "dl-new", Text: ptr("a"), Reason: "r"}, replay.ErrStale},
		{"no reason", replay.Correction{DeadLetterID: "dl-ok", Text: ptr("a")}, replay.ErrCorrection},
		{"nothing given", replay.Correction{DeadLetterID: "dl-ok", Reason: "r"}, replay.ErrCorrection},
		{"nothing changed", replay.Correction{DeadLetterID: "dl-ok", Text: ptr("same"), Reason: "r"}, replay.ErrCorrection},
		{"metadata not an object", replay.Correction{DeadLetterID: "dl-ok", Metadata: ptr(json.RawMessage(`[1]`)), Reason: "r"}, replay.ErrCorrection},
		{"text over the job limit", replay.Correction{DeadLetterID: "dl-ok", Text: &huge, Reason: "r"}, replay.ErrCorrection},
	} {
		if _, err := tc.c.Execute(ctx, b.db.Pool, b.js); !errors.Is(err, tc.want) {
			t.Errorf("%s: execute: %v; want %v", tc.name, err, tc.want)
		}
		if _, err := tc.c.DryRun(ctx, b.db.Pool); !errors.Is(err, tc.want) {
			t.Errorf("%s: dry run: %v; want %v", tc.name, err, tc.want)
		}
	}
	if n := countRows(t, b, `SELECT count(*) FROM replay_audit`); n != 0 {
		t.Errorf("%d audit rows for refused corrections, want 0", n)
	}
	if n := countRows(t, b, `SELECT count(*) FROM dead_letters WHERE replay_id IS NOT NULL`); n != 0 {
		t.Errorf("refused corrections marked %d dead letters", n)
	}
	if jobs := b.published(t, "r"); len(jobs) != 0 {
		t.Errorf("refused corrections published %d jobs", len(jobs))
	}
}

// A diff is never written with a secret in it: a correction whose text
// holds one is recorded by hashes and the rule's name only.
func TestCorrectWithholdsSecretsFromTheAudit(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.seedParked(t, parkedChunk{id: "dl-sec", source: "c", native: "sec.txt", text: "the key is missing"})
	const key = "AKIAZ7Q3M9R2T8W4K6P1"
	rep, err := replay.Correction{DeadLetterID: "dl-sec", Text: ptr("the key is " + key), By: "cli:tester", Reason: "paste"}.DryRun(ctx, b.db.Pool)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Diff.Withheld != "aws_access_key" || rep.Diff.Text != "" {
		t.Errorf("diff %+v; want it withheld under aws_access_key", rep.Diff)
	}
	if n := countRows(t, b, `SELECT count(*) FROM replay_audit WHERE position($1 in scope::text) > 0`, key); n != 0 {
		t.Error("the audit row holds the secret")
	}
}

// --rederive takes the chunk again from the source when the source still
// holds the version the dead letter is of, and refuses, saying so, when
// it does not.
func TestRederive(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	dir := t.TempDir()
	source := "Rivers carry water to the sea."
	if err := os.WriteFile(filepath.Join(dir, "river.txt"), []byte(source), 0o644); err != nil {
		t.Fatal(err)
	}
	doc := readDoc(t, dir)
	meta, docHash, err := corpus.Admit(doc)
	if err != nil {
		t.Fatal(err)
	}
	// The payload the dead letter holds is not what the source splits
	// into (a chunker fault, say); the document's hash is the source's.
	b.seedParked(t, parkedChunk{id: "dl-src", source: "c", native: "river.txt", text: "Rivers carry w", meta: meta, docHash: docHash})
	rd := replay.Rederivation{From: dir, Chunk: chunk.Config{Size: 400, Unit: chunk.UnitChars}}
	c := replay.Correction{DeadLetterID: "dl-src", By: "cli:tester", Reason: "re-cut"}
	if err := rd.Apply(ctx, b.db.Pool, &c); err != nil {
		t.Fatal(err)
	}
	if c.Text == nil || *c.Text != source || !strings.HasPrefix(c.Origin, "rederived from ") {
		t.Fatalf("re-derived %+v; want the source's text", c)
	}
	rep, err := c.Execute(ctx, b.db.Pool, b.js)
	if err != nil {
		t.Fatal(err)
	}
	if jobs := b.published(t, "c"); len(jobs) != 1 || jobs[0].Text != source || string(jobs[0].Metadata) != string(meta) || rep.Origin != c.Origin {
		t.Errorf("published %+v; want the source's chunk and metadata", jobs)
	}

	// The source changed since the version was recorded: refused.
	b.seedParked(t, parkedChunk{id: "dl-moved", source: "c", native: "lake.txt", text: "a lake", docHash: "not-the-source"})
	if err := os.WriteFile(filepath.Join(dir, "lake.txt"), []byte("a lake, edited since\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c = replay.Correction{DeadLetterID: "dl-moved", Reason: "re-cut"}
	if err := rd.Apply(ctx, b.db.Pool, &c); !errors.Is(err, replay.ErrSourceChanged) || !strings.Contains(err.Error(), "source changed since") || c.Text != nil {
		t.Errorf("re-derive from a changed source: %v (text %v); want ErrSourceChanged, nothing taken", err, c.Text)
	}
	c = replay.Correction{DeadLetterID: "dl-src", Reason: "re-cut"}
	if err := (replay.Rederivation{From: t.TempDir()}).Apply(ctx, b.db.Pool, &c); !errors.Is(err, replay.ErrSourceChanged) {
		t.Errorf("re-derive from the wrong directory: %v; want ErrSourceChanged naming the missing document", err)
	}
}

func readDoc(t *testing.T, dir string) corpus.Document {
	t.Helper()
	r, err := corpus.NewReader(corpus.Config{Inputs: []string{dir}})
	if err != nil {
		t.Fatal(err)
	}
	var doc corpus.Document
	if err := r.Walk(context.Background(), func(d corpus.Document) error { doc = d; return nil }); err != nil {
		t.Fatal(err)
	}
	return doc
}

func countRows(t *testing.T, b *testBundle, sql string, args ...any) int {
	t.Helper()
	var n int
	if err := b.db.Pool.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}
