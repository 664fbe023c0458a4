package cli_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/sluicehq/sluice/internal/content/corpus"
	"github.com/sluicehq/sluice/internal/dev/testenv"
	"github.com/sluicehq/sluice/internal/ingest/producer"
	"github.com/sluicehq/sluice/internal/platform/broker"
	"github.com/sluicehq/sluice/internal/platform/natsauth"
	"github.com/sluicehq/sluice/internal/store/deadletter"
	"github.com/sluicehq/sluice/migrations"
	"github.com/sluicehq/sluice/pkg/messages"
)

// `dlq show` says a parked file's bytes are kept and how to replay it;
// `dlq replay --id --password` previews, then with --execute stores an
// encrypted PDF; `dlq correct --text` stores keyed text as a corrupt
// PDF's document. The CLI runs as the operator's role.
func TestDLQReplayAndCorrectOnParkedFiles(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testenv.NewDatabase(t, testenv.WithDims(8))
	n, js := testenv.NewJetStream(t, broker.Topology{})
	root := t.TempDir()
	for _, name := range []string{"encrypted.pdf", "truncated.pdf"} {
		b, err := os.ReadFile(filepath.Join("..", "..", "content", "extract", "testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r, err := corpus.NewReader(corpus.Config{Inputs: []string{root}, Extractor: corpus.LimitedExtractor{}})
	if err != nil {
		t.Fatal(err)
	}
	p, err := producer.New(producer.Config{SourceID: "docs"}, db.Pool, js, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Run(ctx, r); err != nil {
		t.Fatal(err)
	}
	triageOutbox(t, db)
	encrypted := messages.DeadLetterID(messages.DocID("docs", "encrypted.pdf"), 0)
	truncated := messages.DeadLetterID(messages.DocID("docs", "truncated.pdf"), 0)
	env := map[string]string{"DATABASE_URL": db.RoleURL(migrations.OperatorRole), "NATS_URL": n.URLFor(natsauth.Operator), "USER": "alice"}

	code, out, errOut := sluice(t, env, "dlq", "show", encrypted)
	if code != 0 || !strings.Contains(out, "kept, 7231 bytes") || !strings.Contains(out, "sluice dlq replay --id "+encrypted) {
		t.Fatalf("dlq show: exit %d\n%s%s", code, out, errOut)
	}
	code, out, errOut = sluice(t, env, "dlq", "replay", "--id", encrypted, "--password", "secret")
	if code != 0 || !strings.Contains(out, "DRY RUN") {
		t.Fatalf("dlq replay (dry): exit %d\n%s%s", code, out, errOut)
	}
	code, out, errOut = sluice(t, env, "dlq", "replay", "--id", encrypted, "--password", "secret", "--execute", "--reason", "password from the owner")
	if code != 0 || !strings.Contains(out, "stored as a new version") {
		t.Fatalf("dlq replay --execute: exit %d\n%s%s", code, out, errOut)
	}
	text := filepath.Join(t.TempDir(), "minutes.txt")
	if err := os.WriteFile(text, []byte("Typed from the paper copy: the board approved the budget."), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = sluice(t, env, "dlq", "correct", "--id", truncated, "--text", text, "--execute", "--reason", "the PDF is damaged")
	if code != 0 || !strings.Contains(out, "stored as a new version") || !strings.Contains(out, "board approved") {
		t.Fatalf("dlq correct --text: exit %d\n%s%s", code, out, errOut)
	}
	var open int
	if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM dead_letters WHERE resolved_at IS NULL`).Scan(&open); err != nil || open != 0 {
		t.Errorf("%d dead letters open (%v), want both resolved", open, err)
	}
	var stored string
	if err := db.Pool.QueryRow(ctx, `SELECT convert_from(m.job, 'UTF8')::jsonb->>'text' FROM ingest_manifest m JOIN documents d USING (doc_id)
		WHERE d.doc_id = $1 AND m.version = d.version`, messages.DocID("docs", "truncated.pdf")).Scan(&stored); err != nil || !strings.Contains(stored, "board approved") {
		t.Errorf("truncated.pdf's chunk %q (%v), want the keyed text", stored, err)
	}
}

// triageOutbox records the dead letters of the outbox in dead_letters,
// as triage does once the relay published them.
func triageOutbox(t *testing.T, db *testenv.Database) {
	t.Helper()
	ctx := context.Background()
	rows, err := db.Pool.Query(ctx, `SELECT o.id, o.payload, p.payload FROM outbox o JOIN dead_letter_payloads p ON p.outbox_id = o.id ORDER BY o.id`)
	if err != nil {
		t.Fatal(err)
	}
	var dls []messages.DeadLetter
	var ids []int64
	for rows.Next() {
		var id int64
		var raw, job []byte
		if err := rows.Scan(&id, &raw, &job); err != nil {
			t.Fatal(err)
		}
		dl, err := messages.DecodeDeadLetter(raw)
		if err != nil {
			t.Fatal(err)
		}
		dl.Payload = job
		dls, ids = append(dls, dl), append(ids, id)
	}
	rows.Close()
	for i, dl := range dls {
		if _, _, err := deadletter.Record(ctx, db.Pool, dl, ids[i]); err != nil {
			t.Fatal(err)
		}
	}
}
