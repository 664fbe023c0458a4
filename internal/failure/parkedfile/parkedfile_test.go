package parkedfile_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/sluicehq/sluice/internal/content/corpus"
	"github.com/sluicehq/sluice/internal/dev/testenv"
	"github.com/sluicehq/sluice/internal/failure/parkedfile"
	"github.com/sluicehq/sluice/internal/failure/replay"
	"github.com/sluicehq/sluice/internal/ingest/producer"
	"github.com/sluicehq/sluice/internal/platform/broker"
	"github.com/sluicehq/sluice/internal/store/deadletter"
	"github.com/sluicehq/sluice/pkg/classify"
	"github.com/sluicehq/sluice/pkg/messages"
)

func TestMain(m *testing.M) { testenv.Main(m) }

const source = "docs"

type testBundle struct {
	ctx  context.Context
	pool *pgxpool.Pool
	js   jetstream.JetStream
	r    *parkedfile.Replayer
	// keepCap is the producer's MaxKeptFileBytes; 0 for its default.
	keepCap int64
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	db := testenv.NewDatabase(t, testenv.WithDims(8))
	_, js := testenv.NewJetStream(t, broker.Topology{})
	return &testBundle{ctx: context.Background(), pool: db.Pool, js: js, r: parkedfile.New(db.Pool, js, zerolog.Nop())}
}

// park runs the producer over the test corpus's files names (from
// internal/content/extract/testdata) or, for names with content,
// written ones, with the corpus settings cfg, and triages the dead
// letters it writes.
func (b *testBundle) park(t *testing.T, cfg corpus.Config, files map[string][]byte) {
	t.Helper()
	root := t.TempDir()
	for name, data := range files {
		if data == nil {
			var err error
			if data, err = os.ReadFile(filepath.Join("..", "..", "content", "extract", "testdata", name)); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(root, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg.Inputs = []string{root}
	if cfg.Extractor == nil {
		cfg.Extractor = corpus.LimitedExtractor{}
	}
	r, err := corpus.NewReader(cfg)
	if err != nil {
		t.Fatal(err)
	}
	p, err := producer.New(producer.Config{SourceID: source, MaxKeptFileBytes: b.keepCap}, b.pool, b.js, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Run(b.ctx, r); err != nil {
		t.Fatal(err)
	}
	b.triage(t)
}

// triage records the dead letters the outbox holds in dead_letters, as
// the DLQ's triage does once the relay published them.
func (b *testBundle) triage(t *testing.T) {
	t.Helper()
	rows, err := b.pool.Query(b.ctx, `SELECT o.id, o.payload, p.payload FROM outbox o JOIN dead_letter_payloads p ON p.outbox_id = o.id ORDER BY o.id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	type row struct {
		id       int64
		raw, job []byte
	}
	var all []row
	for rows.Next() {
		var r row
		if err := rows.Scan(&r.id, &r.raw, &r.job); err != nil {
			t.Fatal(err)
		}
		all = append(all, r)
	}
	rows.Close()
	for _, r := range all {
		dl, err := messages.DecodeDeadLetter(r.raw)
		if err != nil {
			t.Fatal(err)
		}
		dl.Payload = r.job
		if _, _, err := deadletter.Record(b.ctx, b.pool, dl, r.id); err != nil {
			t.Fatal(err)
		}
	}
}

// letter returns the dead letter of native id name and its class.
func (b *testBundle) letter(t *testing.T, name string) (id, class string, resolved bool) {
	t.Helper()
	id = messages.DeadLetterID(messages.DocID(source, name), 0)
	if err := b.pool.QueryRow(b.ctx, `SELECT error_class, resolved_at IS NOT NULL FROM dead_letters WHERE dead_letter_id = $1`, id).
		Scan(&class, &resolved); err != nil {
		t.Fatalf("%s: no dead letter: %v", name, err)
	}
	return id, class, resolved
}

// pendingTexts returns the texts of the chunks of name's current
// version, and how many versions of its chunks the manifest holds.
func (b *testBundle) pendingTexts(t *testing.T, name string) (texts []string, versions int) {
	t.Helper()
	doc := messages.DocID(source, name)
	if err := b.pool.QueryRow(b.ctx, `SELECT count(DISTINCT version) FROM ingest_manifest WHERE doc_id = $1 AND status <> 'parked'`, doc).Scan(&versions); err != nil {
		t.Fatal(err)
	}
	rows, err := b.pool.Query(b.ctx, `SELECT convert_from(m.job, 'UTF8')::jsonb->>'text' FROM ingest_manifest m
		JOIN documents d USING (doc_id) WHERE m.doc_id = $1 AND m.version = d.version AND m.status = 'pending' ORDER BY m.chunk_index`, doc)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		texts = append(texts, s)
	}
	return texts, versions
}

// An encrypted PDF parks as encrypted with its bytes kept; a replay
// with the wrong password parks it again, keeping them; one with the
// right password stores it once and resolves the dead letter, and a
// second replay finds nothing to do.
func TestEncryptedPDFReplaysWithItsPassword(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.park(t, corpus.Config{}, map[string][]byte{"encrypted.pdf": nil})
	id, class, _ := b.letter(t, "encrypted.pdf")
	if class != classify.ClassEncrypted {
		t.Fatalf("encrypted.pdf parked as %s", class)
	}
	opts := parkedfile.Options{Password: "wrong", By: "cli:alice", Reason: "the owner sent a password"}
	if _, err := b.r.DryRun(b.ctx, id, opts); err != nil {
		t.Fatal(err)
	}
	rep, err := b.r.Execute(b.ctx, id, opts)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Outcome != parkedfile.ParkedAgain || rep.NewClass != classify.ClassEncrypted {
		t.Fatalf("wrong password: outcome %s, class %s; want parked again as encrypted", rep.Outcome, rep.NewClass)
	}
	// Until triage records the new failure, the old one is superseded.
	if _, err := b.r.Execute(b.ctx, id, opts); !errors.Is(err, replay.ErrResolved) && !errors.Is(err, replay.ErrInFlight) {
		t.Fatalf("a replay before the failure is triaged: %v, want it refused", err)
	}
	b.triage(t)
	if k, ok, err := deadletter.KeptFileOf(b.ctx, b.pool, id); err != nil || !ok || k.SHA256 != rep.SHA256 {
		t.Fatalf("after parking again the bytes are kept %v (%+v, %v), want the same content", ok, k, err)
	}

	opts.Password = "secret"
	rep, err = b.r.Execute(b.ctx, id, opts)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Outcome != parkedfile.Stored || rep.Chunks == 0 {
		t.Fatalf("right password: outcome %s with %d chunks published", rep.Outcome, rep.Chunks)
	}
	if _, _, resolved := b.letter(t, "encrypted.pdf"); !resolved {
		t.Error("the dead letter is open after the document was stored")
	}
	texts, versions := b.pendingTexts(t, "encrypted.pdf")
	if versions != 1 || len(texts) != rep.Chunks || !strings.Contains(strings.Join(texts, " "), "sample report") {
		t.Errorf("%d versions of %d chunks recorded (%d published): %q", versions, len(texts), rep.Chunks, texts)
	}
	if _, err := b.r.Execute(b.ctx, id, opts); !errors.Is(err, replay.ErrResolved) {
		t.Errorf("a second replay: %v, want ErrResolved", err)
	}
	info, err := b.js.Stream(b.ctx, broker.IngestStream)
	if err != nil {
		t.Fatal(err)
	}
	if st, err := info.Info(b.ctx); err != nil || int(st.State.Msgs) != rep.Chunks {
		t.Errorf("INGEST holds %v jobs (%v), want the %d of the one stored version", st.State.Msgs, err, rep.Chunks)
	}
	entry, ok, err := replay.AuditOf(b.ctx, b.pool, rep.ReplayID)
	if err != nil || !ok || entry.Action != replay.ActionReplay || entry.Stored != 1 || entry.RequestedBy != "cli:alice" {
		t.Errorf("audit of the replay: %+v (%v, %v); want a replay by cli:alice, stored", entry, ok, err)
	}
}

// A file parked as too large replays once the limit is raised.
func TestTooLargeFileReplaysUnderARaisedLimit(t *testing.T) {
	t.Parallel()
	b := setup(t)
	text := strings.Repeat("Minutes of the quarterly review. ", 20)
	b.park(t, corpus.Config{MaxDocumentBytes: 100}, map[string][]byte{"minutes.md": []byte(text)})
	id, class, _ := b.letter(t, "minutes.md")
	if class != classify.ClassTooLarge {
		t.Fatalf("minutes.md parked as %s", class)
	}
	rep, err := b.r.Execute(b.ctx, id, parkedfile.Options{MaxDocumentBytes: 200, Reason: "still too small"})
	if err != nil || rep.Outcome != parkedfile.ParkedAgain || rep.NewClass != classify.ClassTooLarge {
		t.Fatalf("replay under 200 bytes: %+v, %v; want parked again as too_large", rep, err)
	}
	b.triage(t)
	rep, err = b.r.Execute(b.ctx, id, parkedfile.Options{MaxDocumentBytes: 1 << 20, Reason: "limit raised"})
	if err != nil || rep.Outcome != parkedfile.Stored {
		t.Fatalf("replay under 1 MiB: %+v, %v; want stored", rep, err)
	}
	if texts, _ := b.pendingTexts(t, "minutes.md"); !strings.Contains(strings.Join(texts, ""), "quarterly review") {
		t.Errorf("chunks %q", texts)
	}
}

// Keyed text replaces a corrupt file's: stored as the document, chunked,
// the dead letter resolved and the audit holding who, why and the text.
func TestKeyedTextIsStoredAsTheDocument(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.park(t, corpus.Config{}, map[string][]byte{"truncated.pdf": nil})
	id, class, _ := b.letter(t, "truncated.pdf")
	if class != classify.ClassCorrupt {
		t.Fatalf("truncated.pdf parked as %s", class)
	}
	text := "Hand-keyed minutes: the board approved the budget."
	rep, err := b.r.Execute(b.ctx, id, parkedfile.Options{Text: &text, By: "cli:bob", Reason: "typed from the paper copy"})
	if err != nil || rep.Outcome != parkedfile.Stored {
		t.Fatalf("keyed text: %+v, %v", rep, err)
	}
	if texts, _ := b.pendingTexts(t, "truncated.pdf"); len(texts) != 1 || texts[0] != text {
		t.Errorf("chunks %q, want the keyed text", texts)
	}
	if _, _, resolved := b.letter(t, "truncated.pdf"); !resolved {
		t.Error("the dead letter is open")
	}
	entry, ok, err := replay.AuditOf(b.ctx, b.pool, rep.ReplayID)
	if err != nil || !ok || entry.Action != replay.ActionCorrect || entry.Reason != "typed from the paper copy" ||
		!strings.Contains(string(entry.Scope), "board approved") {
		t.Errorf("audit: %+v (%v, %v)", entry, ok, err)
	}
}

// Keyed text is screened: a secret in it is not written to the audit
// trail, and its chunk is escalated rather than published.
func TestKeyedTextWithASecretIsWithheld(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.park(t, corpus.Config{}, map[string][]byte{"truncated.pdf": nil})
	id, _, _ := b.letter(t, "truncated.pdf")
	text := "deploy key AKIAIOSFODNN7EXAMPLE for the bucket"
	rep, err := b.r.Execute(b.ctx, id, parkedfile.Options{Text: &text, Reason: "typed in"})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Withheld == "" || strings.Contains(rep.TextDiff, "AKIA") || rep.Chunks != 0 {
		t.Errorf("report %+v: want the diff withheld and nothing published", rep)
	}
}

// A file whose bytes were not kept (over the cap) cannot be replayed from
// them: the refusal says why and points to keyed text, which still works.
func TestFileNotKeptIsRefusedButTakesKeyedText(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.keepCap = 1000
	b.park(t, corpus.Config{}, map[string][]byte{"truncated.pdf": nil})
	id, _, _ := b.letter(t, "truncated.pdf")
	_, err := b.r.DryRun(b.ctx, id, parkedfile.Options{})
	if !errors.Is(err, parkedfile.ErrNotKept) || !strings.Contains(err.Error(), "1000-byte cap") || !strings.Contains(err.Error(), "--text") {
		t.Fatalf("replay of a file over the cap: %v, want ErrNotKept naming the cap and keyed text", err)
	}
	text := "Typed in."
	if rep, err := b.r.Execute(b.ctx, id, parkedfile.Options{Text: &text, Reason: "not kept"}); err != nil || rep.Outcome != parkedfile.Stored {
		t.Fatalf("keyed text: %+v, %v", rep, err)
	}
}

// Erasing a document erases the kept bytes of its parked file, and only
// the contents no other dead letter refers to.
func TestErasureTakesAParkedFilesKeptBytes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.park(t, corpus.Config{}, map[string][]byte{"truncated.pdf": nil, "scan.pdf": nil})
	doc := messages.DocID(source, "truncated.pdf")
	tx, err := b.pool.Begin(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := deadletter.Erase(b.ctx, tx, []string{doc}); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(b.ctx); err != nil {
		t.Fatal(err)
	}
	var contents, refs int
	if err := b.pool.QueryRow(b.ctx, `SELECT (SELECT count(*) FROM file_bytes), (SELECT count(*) FROM file_bytes_refs WHERE doc_id = $1)`, doc).
		Scan(&contents, &refs); err != nil {
		t.Fatal(err)
	}
	if contents != 1 || refs != 0 {
		t.Errorf("after erasing truncated.pdf: %d contents kept, %d references of it; want scan.pdf's only", contents, refs)
	}
}
