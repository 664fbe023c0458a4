package systemtest

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/dev/embedsim"
	"github.com/sluicehq/sluice/internal/dev/testenv"
	"github.com/sluicehq/sluice/internal/failure/replay"
	"github.com/sluicehq/sluice/internal/ingest/pipeline"
	"github.com/sluicehq/sluice/internal/ingest/producer"
	"github.com/sluicehq/sluice/pkg/messages"
)

// parkMangled deploys a system whose embedder rejects any text holding
// "mangled" with a 400, ingests one such document beside a good one from
// a directory, and returns the dead letter id of the parked chunk and
// the directory.
func parkMangled(t *testing.T, source string) (*system, string, string) {
	s := newSystem(t, testenv.DefaultBackend, embedsim.Config{Faults: embedsim.Faults{Poison: []embedsim.PoisonRule{{Match: "mangled", Kind: embedsim.PoisonInvalidInput}}}},
		pipeline.Config{})
	s.startAll(noBreaker)
	dir := filepath.Dir(writeFile(t, "bad.txt", "a mangled chunk about rivers"))
	if err := os.WriteFile(filepath.Join(dir, "good.txt"), []byte("a fine chunk about gates"), 0o644); err != nil {
		t.Fatal(err)
	}
	s.runProducer(producer.Config{SourceID: source}, dir)
	s.eventually(20*time.Second, "the mangled chunk quarantined", func() bool {
		return s.count(`SELECT count(*) FROM dead_letters WHERE error_class = 'bad_request'`) == 1 &&
			s.count(`SELECT count(*) FROM chunk_embeddings`) == 1
	})
	var id string
	if err := s.db.Pool.QueryRow(context.Background(), `SELECT dead_letter_id FROM dead_letters`).Scan(&id); err != nil {
		t.Fatal(err)
	}
	return s, id, dir
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// A chunk parked for good is corrected with new text through the CLI:
// the dry run shows the diff and changes nothing, the executed
// correction is stored with the corrected text and its content hash, its
// dead letter is resolved, the audit shows it stored, and reconcile
// finds nothing wrong.
func TestCorrectedChunkIsStored(t *testing.T) {
	t.Parallel()
	s, id, _ := parkMangled(t, "fix")
	const fixed = "a corrected chunk about rivers"
	file := writeFile(t, "fixed.txt", fixed)

	if code, _, errOut := s.sluice("dlq", "correct", "--id", id, "--text", file); code != 2 || !strings.Contains(errOut, "--reason") {
		t.Fatalf("correct without --reason: code %d %s; want a usage error naming --reason", code, errOut)
	}
	code, out, errOut := s.sluice("dlq", "correct", "--id", id, "--text", file, "--reason", "strip the mangling")
	if code != 0 || !strings.Contains(out, "DRY RUN") || !strings.Contains(out, "-a mangled chunk about rivers\n+"+fixed+"\n") {
		t.Fatalf("dry run: code %d\n%s%s", code, out, errOut)
	}
	if n := s.count(`SELECT count(*) FROM dead_letters WHERE replayed_at IS NOT NULL`); n != 0 {
		t.Fatalf("a dry run marked %d dead letters", n)
	}
	code, out, errOut = s.sluice("dlq", "correct", "--id", id, "--text", file, "--reason", "strip the mangling", "--execute")
	if code != 0 || !strings.Contains(out, "dispatched 1 to ingest.replay.fix") {
		t.Fatalf("execute: code %d\n%s%s", code, out, errOut)
	}
	s.eventually(20*time.Second, "the corrected chunk stored and its dead letter resolved", func() bool {
		return s.count(`SELECT count(*) FROM chunk_embeddings WHERE text = $1`, fixed) == 1 &&
			s.count(`SELECT count(*) FROM dead_letters WHERE resolved_at IS NULL`) == 0
	})
	var stored, owed string
	var meta []byte
	if err := s.db.Pool.QueryRow(context.Background(), `SELECT e.content_hash, m.content_hash, e.metadata::text FROM chunk_embeddings e
		JOIN ingest_manifest m USING (doc_id, chunk_index) WHERE e.text = $1`, fixed).Scan(&stored, &owed, &meta); err != nil {
		t.Fatal(err)
	}
	want, err := messages.ContentHash(fixed, meta)
	if err != nil || stored != want || owed != want {
		t.Errorf("stored hash %s, manifest hash %s; want both %s, the corrected text's (%v)", stored, owed, want, err)
	}
	if n := s.count(`SELECT count(*) FROM chunk_embeddings WHERE text LIKE '%mangled%'`); n != 0 {
		t.Errorf("%d chunks stored with the text the correction replaced", n)
	}
	if n := s.count(`SELECT count(*) FROM documents WHERE status <> 'ready'`); n != 0 {
		t.Errorf("%d documents not ready after the correction", n)
	}
	if code, out, errOut := s.sluice("reconcile", "--json"); code != 0 || !strings.Contains(out, `"ok": true`) {
		t.Fatalf("reconcile: code %d\n%s%s", code, out, errOut)
	}
	entries := s.audit("--action", "correct")
	if len(entries) != 2 || entries[0].DryRun || entries[0].Stored != 1 || entries[0].Dispatched != 1 || !entries[1].DryRun ||
		entries[0].Reason != "strip the mangling" || entries[0].RequestedBy != "cli:ops" {
		t.Fatalf("dlq audit --action correct: %+v; want the correction, stored, then its dry run", entries)
	}
	var scope replay.CorrectionScope
	if err := json.Unmarshal(entries[0].Scope, &scope); err != nil || scope.DeadLetterID != id || scope.Diff.HashAfter != want ||
		!strings.Contains(scope.Diff.Text, "+"+fixed) {
		t.Errorf("the correction's audited scope %s (%v); want its dead letter and diff", entries[0].Scope, err)
	}
	if code, out, _ := s.sluice("dlq", "audit"); code != 0 || !strings.Contains(out, "correct") {
		t.Errorf("dlq audit table: code %d\n%s", code, out)
	}
	// The same correction again dispatches nothing: the dead letter is resolved.
	if code, _, errOut := s.sluice("dlq", "correct", "--id", id, "--text", file, "--reason", "again", "--execute"); code != 1 || !strings.Contains(errOut, "resolved") {
		t.Errorf("correcting a resolved dead letter: code %d %s; want a refusal", code, errOut)
	}
}

// A correction goes through every screen again: new text that matches a
// policy rule is parked as an escalation, never embedded, and its diff is
// withheld from the audit trail.
func TestCorrectionIsScreenedAgain(t *testing.T) {
	t.Parallel()
	s, id, _ := parkMangled(t, "screen")
	secret := "a chunk about rivers, key AKIAZ7Q3M9R2T8W4K6P1"
	file := writeFile(t, "fixed.txt", secret)
	code, out, errOut := s.sluice("dlq", "correct", "--id", id, "--text", file, "--reason", "pasted the wrong thing", "--execute")
	if code != 0 || !strings.Contains(out, "dispatched 1") || !strings.Contains(out, "diff withheld") || strings.Contains(out, "AKIA") {
		t.Fatalf("execute: code %d\n%s%s", code, out, errOut)
	}
	s.eventually(20*time.Second, "the correction parked as an escalation", func() bool {
		return s.count(`SELECT count(*) FROM dead_letters WHERE dead_letter_id = $1 AND disposition = 'escalate' AND replay_gen = 1`, id) == 1
	})
	if n := s.sim.SeenCount(secret); n != 0 {
		t.Errorf("the embedder saw the escalated correction %d times", n)
	}
	if n := s.count(`SELECT count(*) FROM chunk_embeddings WHERE text LIKE '%AKIA%'`); n != 0 {
		t.Errorf("%d chunks stored with the secret", n)
	}
	if n := s.count(`SELECT count(*) FROM replay_audit WHERE position('AKIA' in scope::text) > 0`); n != 0 {
		t.Error("the audit trail holds the secret")
	}
	if code, _, errOut := s.sluice("dlq", "correct", "--id", id, "--text", file, "--reason", "again"); code != 1 || !strings.Contains(errOut, "escalation") {
		t.Errorf("correcting the escalation: code %d %s; want a refusal", code, errOut)
	}
}

// --rederive re-reads the document from the directory it was ingested
// from, as the producer read it: the source as recorded re-derives the
// very payload the dead letter holds; other chunk settings, or a source
// edited since, are refused with the reason.
func TestRederiveChecksTheSource(t *testing.T) {
	t.Parallel()
	s, id, dir := parkMangled(t, "derive")
	// runProducer splits by 400 characters without overlap.
	rederive := []string{"dlq", "correct", "--id", id, "--rederive", "--from", dir, "--reason", "re-read", "--chunk-unit", "chars", "--chunk-overlap", "0"}
	if code, _, errOut := s.sluice(append(rederive, "--chunk-size", "400")...); code != 1 || !strings.Contains(errOut, "nothing to change") {
		t.Errorf("re-derive from the unchanged source: code %d %s; want the dead letter's own payload back (nothing to change)", code, errOut)
	}
	if code, _, errOut := s.sluice(append(rederive, "--chunk-size", "5")...); code != 1 || !strings.Contains(errOut, "splits into") {
		t.Errorf("re-derive with other chunk settings: code %d %s; want a refusal naming the chunk count", code, errOut)
	}
	if code, _, errOut := s.sluice("dlq", "correct", "--id", id, "--rederive", "--reason", "r"); code != 2 || !strings.Contains(errOut, "--from") {
		t.Errorf("--rederive without --from: code %d %s; want a usage error", code, errOut)
	}
	if err := os.WriteFile(filepath.Join(dir, "bad.txt"), []byte("a chunk about rivers, edited since"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := s.sluice(append(rederive, "--chunk-size", "400", "--execute")...); code != 1 || !strings.Contains(errOut, "source changed since") {
		t.Errorf("re-derive from an edited source: code %d %s; want a refusal saying the source changed", code, errOut)
	}
	if n := s.count(`SELECT count(*) FROM dead_letters WHERE replayed_at IS NOT NULL`) + s.count(`SELECT count(*) FROM replay_audit`); n != 0 {
		t.Errorf("refused re-derivations marked or audited %d rows", n)
	}
}
