package cli_test

import (
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/dev/testenv"
	"github.com/sluicehq/sluice/migrations"
	"github.com/sluicehq/sluice/pkg/messages"
)

func TestDLQShow(t *testing.T) {
	t.Parallel()
	db := testenv.NewDatabase(t)
	const secret = "confidential chunk text"
	hash, err := messages.ContentHash(secret, nil)
	if err != nil {
		t.Fatal(err)
	}
	job := messages.ChunkJob{Schema: messages.ChunkJobSchema, DocID: messages.DocID("wiki", "pages/Go.md"), ChunkIndex: 2,
		DocVersion: 3, ChunkCount: 5, SourceID: "wiki", SourceNativeID: "pages/Go.md", RunID: "run_01",
		ContentHash: hash, Text: secret, PublishedAt: time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)}
	payload, err := job.Encode()
	if err != nil {
		t.Fatal(err)
	}
	seedDLRows(t, db.Pool,
		dlRow{id: "job", source: "wiki", class: "bad_request", payload: payload, lastAgo: time.Minute},
		dlRow{id: "binary", source: "wiki", class: "invalid_message", payload: []byte{0xff, 0xfe, 'x', 0}, lastAgo: time.Minute},
		dlRow{id: "none", source: "wiki", class: "invalid_message", lastAgo: time.Minute},
	)
	env := map[string]string{"DATABASE_URL": db.URL}

	code, out, errOut := sluice(t, env, "dlq", "show", "job")
	if code != 0 || strings.Contains(out, secret) || !strings.Contains(out, hash) || !strings.Contains(errOut, "--text") {
		t.Fatalf("show without --text: exit %d, stdout %q, stderr %q; want the job's hash, not its text", code, out, errOut)
	}
	if f := rowFields(t, out, "job.chunk_count"); f[1] != "5" {
		t.Errorf("chunk_count row %q", f)
	}
	code, out, _ = sluice(t, env, "dlq", "show", "job", "--text")
	if code != 0 || !strings.Contains(out, "--- text ---\n"+secret+"\n") {
		t.Fatalf("show --text: exit %d, stdout %q; want the text", code, out)
	}

	var d struct {
		DeadLetterID string `json:"dead_letter_id"`
		Payload      struct {
			Bytes    int            `json:"bytes"`
			ChunkJob map[string]any `json:"chunk_job"`
		} `json:"payload"`
	}
	sluiceDecode(t, env, &d, "dlq", "show", "job")
	if _, has := d.Payload.ChunkJob["text"]; has || d.Payload.ChunkJob["chunk_count"] != 5.0 || d.Payload.Bytes != len(payload) {
		t.Errorf("JSON without --text: %+v", d)
	}
	sluiceDecode(t, env, &d, "dlq", "show", "--text", "job")
	if d.Payload.ChunkJob["text"] != secret {
		t.Errorf("JSON with --text lacks the text: %+v", d)
	}

	code, out, _ = sluice(t, env, "dlq", "show", "binary", "--text")
	if code != 0 || !strings.Contains(out, "4 bytes, not a chunk job") || !strings.Contains(out, "ff fe 78 00") {
		t.Errorf("binary payload: exit %d, stdout %q; want its size and a hex dump", code, out)
	}
	code, out, _ = sluice(t, env, "dlq", "show", "none")
	if code != 0 || rowFields(t, out, "payload ")[1] != "none" {
		t.Errorf("no payload: exit %d, stdout %q", code, out)
	}
}

func TestDLQShowErrors(t *testing.T) {
	t.Parallel()
	db := testenv.NewDatabase(t)
	env := map[string]string{"DATABASE_URL": db.URL}
	code, out, errOut := sluice(t, env, "dlq", "show", "dl_missing")
	if code != 1 || out != "" || !strings.Contains(errOut, `dead letter "dl_missing" not found`) {
		t.Errorf("unknown id: exit %d, stdout %q, stderr %q; want 1 and not found", code, out, errOut)
	}
	for _, args := range [][]string{{}, {"a", "b"}} {
		code, _, errOut = sluice(t, env, append([]string{"dlq", "show"}, args...)...)
		if code != 2 || !strings.Contains(errOut, "one DEAD_LETTER_ID") {
			t.Errorf("show %q: exit %d, stderr %q; want 2", args, code, errOut)
		}
	}
}

// An escalation's secret text is shown only to the operator role, with a
// reason, and each read is recorded with who asked and why; no other role
// gets it.
func TestDLQShowRevealsEscalatedTextAudited(t *testing.T) {
	t.Parallel()
	db := testenv.NewDatabase(t)
	const secret = "AKIAIOSFODNN7EXAMPLE"
	seedDLRows(t, db.Pool, dlRow{id: "esc", source: "wiki", class: "secret_detected", disposition: messages.DispositionEscalate, lastAgo: time.Minute})
	if _, err := db.Pool.Exec(t.Context(), `INSERT INTO escalated_chunks (doc_id, chunk_index, version, rule, text) VALUES ('doc_esc', 0, 1, 'aws_key', $1)`, secret); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"DATABASE_URL": db.RoleURL(migrations.OperatorRole), "USER": "ops"}
	if code, out, errOut := sluice(t, env, "dlq", "show", "esc"); code != 0 || strings.Contains(out, secret) {
		t.Fatalf("show: exit %d, stdout %q, stderr %q; want the escalation without its text", code, out, errOut)
	}
	if code, out, errOut := sluice(t, env, "dlq", "show", "esc", "--reveal-escalated"); code != 2 || strings.Contains(out, secret) || !strings.Contains(errOut, "--reason") {
		t.Fatalf("reveal without a reason: exit %d, stdout %q, stderr %q; want a usage error", code, out, errOut)
	}
	code, out, errOut := sluice(t, env, "dlq", "show", "esc", "--reveal-escalated", "--reason", "incident 42")
	if code != 0 || !strings.Contains(out, "--- escalated text (read recorded in escalated_text_audit) ---\n"+secret+"\n") {
		t.Fatalf("reveal: exit %d, stdout %q, stderr %q; want the text", code, out, errOut)
	}
	var who, login, reason string
	if err := db.Pool.QueryRow(t.Context(), `SELECT requested_by, login, reason FROM escalated_text_audit`).Scan(&who, &login, &reason); err != nil {
		t.Fatal(err)
	}
	if who != "cli:ops" || login != migrations.OperatorRole || reason != "incident 42" {
		t.Errorf("audit row: %q as %q for %q; want cli:ops as %s for incident 42", who, login, reason, migrations.OperatorRole)
	}
	env["DATABASE_URL"] = db.RoleURL(migrations.ConsoleRole)
	if code, out, _ := sluice(t, env, "dlq", "show", "esc", "--reveal-escalated", "--reason", "curious"); code != 1 || strings.Contains(out, secret) {
		t.Errorf("reveal as %s: exit %d, stdout %q; want refused", migrations.ConsoleRole, code, out)
	}
}

// A file parked whole, before chunking, shows as a parked file with its
// identity, not as a payload that is "not a chunk job".
func TestDLQShowParkedFile(t *testing.T) {
	t.Parallel()
	db := testenv.NewDatabase(t)
	pf := messages.ParkedFile{Schema: messages.ParkedFileSchema, SourceNativeID: "pkg/manual.pdf", Path: "/usr/share/doc/pkg/manual.pdf",
		Bytes: 52311, Format: "pdf", MIME: "application/pdf", SHA256: strings.Repeat("0f", 32), Status: "unsupported"}
	payload, err := pf.Encode()
	if err != nil {
		t.Fatal(err)
	}
	seedDLRows(t, db.Pool, dlRow{id: "pdf", source: "docs", class: "unsupported_format", payload: payload, lastAgo: time.Minute})
	env := map[string]string{"DATABASE_URL": db.URL}
	code, out, errOut := sluice(t, env, "dlq", "show", "pdf")
	if code != 0 || strings.Contains(out, "not a chunk job") || !strings.Contains(out, "parked file") ||
		rowFields(t, out, "file.path")[1] != pf.Path || rowFields(t, out, "file.mime")[1] != "application/pdf" ||
		rowFields(t, out, "file.sha256")[1] != pf.SHA256 || strings.Contains(errOut, "--text") {
		t.Errorf("dlq show of a parked file: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	var d struct {
		Payload struct {
			ParkedFile messages.ParkedFile `json:"parked_file"`
		} `json:"payload"`
	}
	sluiceDecode(t, env, &d, "dlq", "show", "pdf")
	if d.Payload.ParkedFile != pf {
		t.Errorf("JSON: %+v, want %+v", d.Payload.ParkedFile, pf)
	}
}
