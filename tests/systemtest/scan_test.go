package systemtest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/content/extract/scantest"
	"github.com/sluicehq/sluice/internal/dev/embedsim"
	"github.com/sluicehq/sluice/internal/dev/testenv"
	"github.com/sluicehq/sluice/internal/ingest/pipeline"
	"github.com/sluicehq/sluice/internal/ingest/producer"
	"github.com/sluicehq/sluice/internal/platform/natsauth"
	"github.com/sluicehq/sluice/migrations"
	"github.com/sluicehq/sluice/pkg/messages"
)

// scanSource is the source the scans are ingested as.
const scanSource = "permits"

// scanCorpus writes the scans of testdata/pages.pdf, rendered at 300 dpi:
// two clean ones (an image of its three pages, an image-only PDF of two)
// and three degraded ones, each of one page, whose confidence is below
// 0.8: noisy, blurred and at a quarter of the resolution.
func scanCorpus(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	pdf := scantest.PagesPDF()
	p1, p2, p3 := scantest.RenderPage(t, pdf, 1), scantest.RenderPage(t, pdf, 2), scantest.RenderPage(t, pdf, 3)
	scantest.WriteFile(t, dir, "clean.png", scantest.PNG(t, scantest.StackPages(p1, p2, p3)))
	scantest.WriteFile(t, dir, "scan.pdf", scantest.ImagePDF(t, p1, p2))
	scantest.WriteFile(t, dir, "noisy.png", scantest.PNG(t, scantest.Noisy(p1, 0.05, 1)))
	scantest.WriteFile(t, dir, "blurred.png", scantest.PNG(t, scantest.Blurred(p2, 6)))
	scantest.WriteFile(t, dir, "lowres.png", scantest.PNG(t, scantest.LowRes(p2, 4)))
	return dir
}

// writePolicy writes a policy file that gives the scans' source its
// OCR bar.
func writePolicy(t *testing.T, bar float64) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "policy.yaml")
	body := fmt.Sprintf("sources:\n  %s:\n    ocr_min_confidence: %v\n    ocr_scope: document\n    ocr_languages: [eng]\n", scanSource, bar)
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// produceCommand runs the producer command over dir, as its binary runs
// with the producer's database role and NATS user, and returns its
// summary.
func (s *system) produceCommand(args ...string) producer.Summary {
	t := s.t
	env := map[string]string{"DATABASE_URL": s.db.RoleURL(migrations.ProducerRole)}
	for _, kv := range s.nats.Env(natsauth.Producer) {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	var stdout, stderr testenv.Buffer
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	if err := producer.Run(context.Background(), append([]string{"--json"}, args...), lookup, strings.NewReader(""), &stdout, &stderr); err != nil {
		t.Fatalf("producer: %v\n%s", err, stderr.String())
	}
	var sum producer.Summary
	if err := json.Unmarshal([]byte(stdout.String()), &sum); err != nil {
		t.Fatalf("producer's summary %q: %v", stdout.String(), err)
	}
	return sum
}

// scanLetter returns the open dead letter of the scan name, its class
// and detail.
func (s *system) scanLetter(name string) (id, class, detail string) {
	s.t.Helper()
	id = messages.DeadLetterID(messages.DocID(scanSource, name), 0)
	if err := s.db.Pool.QueryRow(context.Background(), `SELECT error_class, error_detail FROM dead_letters WHERE dead_letter_id = $1`, id).
		Scan(&class, &detail); err != nil {
		s.t.Fatalf("%s: no dead letter: %v", name, err)
	}
	return id, class, detail
}

// stored reports whether the scan name is stored once: one version of
// its chunks embedded, and its dead letter, if any, resolved.
func (s *system) stored(name string) bool {
	doc := messages.DocID(scanSource, name)
	return s.count(`SELECT count(DISTINCT version) FROM chunk_embeddings WHERE doc_id = $1`, doc) == 1 &&
		s.count(`SELECT count(*) FROM chunk_embeddings e JOIN documents d USING (doc_id) WHERE e.doc_id = $1 AND e.version = d.version`, doc) > 0 &&
		s.count(`SELECT count(*) FROM dead_letters WHERE doc_id = $1 AND resolved_at IS NULL`, doc) == 0
}

// searchHit is what a test reads of a hit of sluice search --json.
type searchHit struct {
	SourceNativeID string `json:"source_native_id"`
	Text           string `json:"text"`
}

// searchFinds reports whether sluice search finds text in the scan name.
func (s *system) searchFinds(query, name string) bool {
	s.t.Helper()
	code, out, errOut := s.sluice("search", "--json", "--source", scanSource, "--k", "10", query)
	if code != 0 {
		s.t.Fatalf("search: %d %s", code, errOut)
	}
	var res struct {
		Hits []searchHit `json:"hits"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		s.t.Fatalf("search output %q: %v", out, err)
	}
	for _, h := range res.Hits {
		if h.SourceNativeID == name && strings.Contains(h.Text, query) {
			return true
		}
	}
	return false
}

// Scans rendered at test time from a text PDF go through the whole
// system: the clean ones are stored and found by search, the degraded
// ones are parked as ocr_low_confidence with their pages and scores and
// nothing embedded, and each way out of the quarantine (keyed text,
// accepting the OCR text, a lowered bar then a replay) stores its
// document once and resolves its dead letter, audited; the run's counts
// add up, those of OCR included.
func TestScansAreStoredOrQuarantinedUntilAPersonDecides(t *testing.T) {
	t.Parallel()
	s := newSystem(t, testenv.DefaultBackend, embedsim.Config{}, pipeline.Config{})
	s.startAll(noBreaker)
	dir := scanCorpus(t)
	policy := writePolicy(t, 0.8)

	sum := s.produceCommand("--source", scanSource, "--policy-file", policy, dir)
	if f := sum.Files; f.Seen != 5 || f.Read != 2 || f.Parked != 3 || sum.Seen != 5 || sum.New != 5 || sum.Failed != 3 || sum.ParkedDocs != 3 {
		t.Fatalf("summary %+v: want 5 files and documents seen (all new), 2 read, 3 parked", sum)
	}
	s.eventually(60*time.Second, "the clean scans stored and the degraded ones triaged", func() bool {
		return s.stored("clean.png") && s.stored("scan.pdf") &&
			s.count(`SELECT count(*) FROM dead_letters WHERE error_class = 'ocr_low_confidence' AND resolved_at IS NULL`) == 3
	})
	if !s.searchFinds(scantest.Sentence2, "clean.png") || !s.searchFinds(scantest.Sentence1, "scan.pdf") {
		t.Error("search does not find the clean scans' sentences")
	}
	var pages string
	if err := s.db.Pool.QueryRow(context.Background(), `SELECT e.metadata::text FROM chunk_embeddings e
		WHERE e.doc_id = $1 AND e.text LIKE '%' || $2 || '%'`, messages.DocID(scanSource, "scan.pdf"), scantest.Sentence1).Scan(&pages); err != nil ||
		!strings.Contains(pages, `"pages": [1, 2]`) || !strings.Contains(pages, `"ocr_confidence": {"1": 0.9`) || !strings.Contains(pages, `"ocr_pages": 2`) {
		t.Errorf("scan.pdf's chunk's metadata %s (%v): want pages 1 and 2, each with its confidence", pages, err)
	}
	letters := map[string]string{}
	for _, name := range []string{"noisy.png", "blurred.png", "lowres.png"} {
		id, class, detail := s.scanLetter(name)
		if class != "ocr_low_confidence" || !strings.Contains(detail, "below the bar of 0.80") || !strings.Contains(detail, "pages 1 (0.") {
			t.Errorf("%s: parked as %s: %q; want ocr_low_confidence naming page 1 and its score", name, class, detail)
		}
		if n := s.count(`SELECT count(*) FROM chunk_embeddings WHERE doc_id = $1`, messages.DocID(scanSource, name)); n != 0 {
			t.Errorf("%s: %d chunks embedded below the bar", name, n)
		}
		letters[name] = id
	}
	if code, out, _ := s.sluice("dlq", "show", letters["blurred.png"]); code != 0 || !strings.Contains(out, "--accept-ocr") || !strings.Contains(out, "ocr_min_confidence") {
		t.Errorf("dlq show of a scan below the bar: %d %q; want the ways out (--accept-ocr, a lowered ocr_min_confidence)", code, out)
	}
	code, out, _ := s.sluice("runs", "show", sum.RunID)
	if want := "files: 5 seen, 2 read, 0 excluded, 3 parked; 5 read by OCR, 3 of them below the bar and waiting for a person"; code != 0 || !strings.Contains(out, want) {
		t.Errorf("runs show: %d %q; want %q", code, out, want)
	}

	s.keyScan(letters["noisy.png"])
	s.acceptScan(letters["lowres.png"])
	s.rereadScan(letters["blurred.png"])
	s.eventually(60*time.Second, "each way out stored its scan once", func() bool {
		return s.stored("noisy.png") && s.stored("lowres.png") && s.stored("blurred.png") &&
			s.count(`SELECT count(*) FROM dead_letters WHERE resolved_at IS NULL`) == 0
	})
	if !s.searchFinds("permit 4411 approved", "noisy.png") {
		t.Error("search does not find the keyed text")
	}
	if n := s.count(`SELECT count(*) FROM ingest_runs WHERE source_id = $1 AND files_keyed = 1 AND files_ocr = 0`, scanSource); n != 1 {
		t.Errorf("%d runs record a keyed document, want the correction's", n)
	}
	if n := s.count(`SELECT count(*) FROM ingest_runs WHERE source_id = $1 AND files_ocr = 1 AND files_ocr_low = 0 AND files_read = 1`, scanSource); n != 2 {
		t.Errorf("%d runs record one scan read by OCR and stored, want the accepted and the re-read ones", n)
	}
	if n := s.count(`SELECT count(*) FROM ingest_runs WHERE source_id = $1 AND files_seen IS DISTINCT FROM files_read + files_parked`, scanSource); n != 0 {
		t.Errorf("%d of the source's runs count files seen other than read + parked", n)
	}
	if n := s.count(`SELECT count(*) FROM documents WHERE source_id = $1 AND status = 'ready'`, scanSource); n != 5 {
		t.Errorf("%d documents ready, want the 5 scans", n)
	}
}

// keyScan keys the text of the scan parked as id in by hand, starting
// from what OCR recognised in it, as a keyer edits it.
func (s *system) keyScan(id string) {
	s.t.Helper()
	if code, out, _ := s.sluice("dlq", "show", id); code != 0 || !strings.Contains(out, "--ocr-text > FILE") || !strings.Contains(out, "file.recognised_text") {
		s.t.Errorf("dlq show of a scan below the bar: %d %q; want the recognised text's size and how to print it", code, out)
	}
	code, recognised, errOut := s.sluice("dlq", "show", id, "--ocr-text")
	if code != 0 || len(strings.Fields(recognised)) < 5 {
		s.t.Fatalf("dlq show --ocr-text: %d %q %s; want the words OCR recognised", code, recognised, errOut)
	}
	file := writeFile(s.t, "keyed.txt", recognised+"\nKeyed from the paper copy: permit 4411 approved.")
	code, out, errOut := s.sluice("dlq", "correct", "--id", id, "--text", file, "--reason", "keyed by the records clerk", "--execute")
	if code != 0 || !strings.Contains(out, "stored as a new version") {
		s.t.Fatalf("keyed text: %d\n%s%s", code, out, errOut)
	}
}

// acceptScan stores the OCR text of the scan parked as id as it is; the
// audit holds the decision and its reason.
func (s *system) acceptScan(id string) {
	s.t.Helper()
	if code, _, errOut := s.sluice("dlq", "replay", "--source", scanSource, "--accept-ocr"); code != 2 || !strings.Contains(errOut, "--id") {
		s.t.Errorf("--accept-ocr without a parked file: %d %s; want a usage error", code, errOut)
	}
	code, out, errOut := s.sluice("dlq", "replay", "--id", id, "--accept-ocr", "--reason", "legible enough for the archive", "--execute")
	if code != 0 || !strings.Contains(out, "accepted as it is") || !strings.Contains(out, "stored as a new version") {
		s.t.Fatalf("accept: %d\n%s%s", code, out, errOut)
	}
	if n := s.count(`SELECT count(*) FROM replay_audit WHERE scope->>'accept_ocr' = 'true' AND scope->>'dead_letter_id' = $1
		AND reason = 'legible enough for the archive'`, id); n != 1 {
		s.t.Errorf("%d audit rows of the accepted scan, want 1", n)
	}
}

// rereadScan lowers the source's bar below the scan parked as id and
// replays it: OCR reads the kept bytes again, under the new bar.
func (s *system) rereadScan(id string) {
	s.t.Helper()
	code, out, errOut := s.sluice("dlq", "replay", "--id", id, "--policy-file", writePolicy(s.t, 0.5), "--reason", "bar lowered for the branch scanner", "--execute")
	if code != 0 || !strings.Contains(out, "stored as a new version") {
		s.t.Fatalf("replay under a lowered bar: %d\n%s%s", code, out, errOut)
	}
}
