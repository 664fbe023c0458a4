package demo_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sluicehq/sluice/internal/content/extract/scantest"
	"github.com/sluicehq/sluice/internal/dev/demo"
	"github.com/sluicehq/sluice/internal/dev/testenv"
)

// The demo converges, reports no leak and no duplicate, changes the
// model through the CLI (see checkMigration), passes the fault drill run
// against its running processes afterwards, and while it runs
// every service's /metrics carries the series operators and alerts
// depend on, with the ones the demo must move above zero. Kept running
// (--keep), it has dropped the model change it rolled back, so a
// document ingested into it gets exactly one vector per chunk, from the
// served generation, and no other generation is kept up to date behind
// the user's back; and the commands its report prints to key in the low
// scan's text store the keyed text.
func TestDemoConvergesExportsMetricsAndKeepsAUsableStack(t *testing.T) {
	t.Parallel()
	bin := testenv.Binaries(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr bytes.Buffer
	var kept error
	scraped := map[string]string{}
	err := demo.Run(ctx, demo.Config{
		BinDir: bin, Documents: 60, Outage: 6 * time.Second, Timeout: 3 * time.Minute, Drill: true, Keep: true,
		Stdout: &stdout, Stderr: &stderr,
		OnConverged: func(addrs map[string]string) {
			for name, addr := range addrs {
				scraped[name] = scrape(t, addr)
			}
		},
		OnKept: func(k demo.Kept) {
			defer cancel()
			kept = errors.Join(ingestOnce(t, ctx, k, stdout.String()), keyScan(t, ctx, k, stdout.String()))
		},
	})
	if err != nil {
		t.Fatalf("demo: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	report := stdout.String()
	t.Log(report)
	if kept != nil {
		t.Error(kept)
	}
	if !strings.Contains(report, "dropped       generation 2, ") {
		t.Errorf("report lacks the drop of the rolled-back generation:\n%s", report)
	}
	for _, want := range []string{"0 leaked, 0 duplicated", "deleted       3 (removed at the source, then a sync run): 0 vectors, 0 text rows, 0 payloads left", "escalations   1", "unsupported_format 1", "context_length_exceeded 1", "policy_violation 1", "ocr_low_confidence 1",
		"encrypted 1", "extract_memory 1", "files         " + demo.BombDOCX + ": parked as extract_memory\n", demo.LockedPDF + ": parked as encrypted\n",
		demo.ReportPDF + ": document ready\n", demo.BoundPDF + ": document ready\n", demo.MinutesDOCX + ": document ready\n",
		"a search for \"" + scantest.Sentence1 + "\" finds poison/report", "scans         scans/" + demo.CleanScan + ": document ready, found at rank ", "scans/" + demo.LowScan + ": parked as ocr_low_confidence, ", " --ocr-text ", " dlq correct --id ", " --accept-ocr ", "DRILL PASSED"} {
		if !strings.Contains(report, want) {
			t.Errorf("report lacks %q:\n%s", want, report)
		}
	}
	checkMigration(t, report)
	byService := map[string][]string{}
	for name, body := range scraped {
		svc := name[:strings.LastIndex(name, "-")]
		byService[svc] = append(byService[svc], body)
	}
	// Every process of a service exports these series.
	present := map[string][]string{
		"consumer": {
			`sluice_pipeline_jobs_total{outcome="stored"}`, `sluice_embed_requests_total{outcome="ok"}`,
			`sluice_embed_request_duration_seconds_count`, `sluice_end_to_end_latency_seconds_count`,
			`sluice_consumer_messages_total{durable="workers",result="ack"}`, `sluice_retries_total`,
			`sluice_circuit_breaker_state`, `sluice_consumer_pending_messages{durable="workers"}`,
			`sluice_consumer_oldest_message_age_seconds{durable="workers"}`,
		},
		"outbox-relay": {`sluice_outbox_published_total`, `sluice_outbox_pending_rows`, `sluice_outbox_oldest_age_seconds`},
		"dlq-replayer": {
			`sluice_dlq_triaged_total`, `sluice_replays_total{outcome="stored"}`, `sluice_escalations_total`,
			`sluice_dlq_ready_to_replay`, `sluice_dlq_parked_recent`, `sluice_dlq_depth`,
			`sluice_pipeline_jobs_total{outcome="stored"}`,
		},
	}
	for svc, series := range present {
		if len(byService[svc]) == 0 {
			t.Errorf("no metrics scraped from %s", svc)
			continue
		}
		for _, name := range series {
			for _, body := range byService[svc] {
				if _, ok := sum(body, name); !ok {
					t.Errorf("%s: %s missing", svc, name)
				}
			}
		}
	}
	// Whether the consumers or the replayer stored a chunk depends on how
	// the outage fell; together they stored every one.
	moved := map[string][]string{
		`sluice_pipeline_jobs_total{outcome="stored"}`:      {"consumer", "dlq-replayer"},
		`sluice_embed_requests_total{outcome="ok"}`:         {"consumer", "dlq-replayer"},
		`sluice_consumer_messages_total{durable="workers"}`: {"consumer"},
		`sluice_retries_total`:                              {"consumer"},
		`sluice_outbox_published_total`:                     {"outbox-relay"},
		`sluice_dlq_triaged_total`:                          {"dlq-replayer"},
		`sluice_escalations_total`:                          {"dlq-replayer"},
		`sluice_dlq_depth`:                                  {"dlq-replayer"},
	}
	if replayed(report) > 0 {
		moved[`sluice_replays_total{outcome="stored"}`] = []string{"dlq-replayer"}
	}
	for name, services := range moved {
		total := 0.0
		for _, svc := range services {
			for _, body := range byService[svc] {
				v, _ := sum(body, name)
				total += v
			}
		}
		if total <= 0 {
			t.Errorf("%s = %v over %v, want it to have moved", name, total, services)
		}
	}
}

// checkMigration asserts the report's model change: generation 2
// backfilled and ready, paid for and compared, served after its
// activation and generation 1 again after the rollback, with reconcile
// clean.
func checkMigration(t *testing.T, report string) {
	t.Helper()
	for _, want := range []string{
		"Model change — generation 2, embed-sim-large at 768 dims, ready in ",
		"activated     search served generation 2\n",
		"rolled back   search served generation 1\n",
		"reconcile     OK: 0 leaked, 0 duplicated, 0 unpublished, 0 lost, 0 stranded, 0 generations nothing carries",
	} {
		if !strings.Contains(report, want) {
			t.Errorf("report lacks %q:\n%s", want, report)
		}
	}
	figures := regexp.MustCompile(`backfilled\s+(\d+) chunks by[\s\S]*provider\s+(\d+) inputs, (\d+) tokens for generation 2; (\d+) chunks reused` +
		`[\s\S]*overlap@10 ([\d.]+), MRR ([\d.]+) over (\d+) queries`).FindStringSubmatch(report)
	if figures == nil {
		t.Fatalf("report lacks the model change's figures:\n%s", report)
	}
	n := make([]float64, len(figures))
	for i, f := range figures[1:] {
		n[i+1], _ = strconv.ParseFloat(f, 64)
	}
	backfilled, inputs, tokens, reused, overlap, mrr, queries := n[1], n[2], n[3], n[4], n[5], n[6], n[7]
	if backfilled <= 0 || inputs <= 0 || tokens <= inputs || queries <= 0 || overlap <= 0 || mrr <= 0 {
		t.Errorf("model change figures: %v backfilled, %v inputs, %v tokens, overlap@10 %v, MRR %v over %v queries; want each above zero (and tokens above inputs)",
			backfilled, inputs, tokens, overlap, mrr, queries)
	}
	// Every chunk backfilled was embedded by the provider or reused.
	if inputs+reused < backfilled {
		t.Errorf("%v inputs and %v reused for %v chunks backfilled: some chunks got a vector from nowhere", inputs, reused, backfilled)
	}
}

// replayed reads the "replayed N" line of the demo report.
func replayed(report string) int {
	m := regexp.MustCompile(`replayed\s+(\d+)`).FindStringSubmatch(report)
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

func scrape(t *testing.T, addr string) string {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Errorf("scrape %s: %v", addr, err)
		return ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// sum adds every sample whose name and labels start with series (labels
// given in series must appear in order as a prefix of the sample's).
func sum(body, series string) (float64, bool) {
	name, labels, _ := strings.Cut(strings.TrimSuffix(series, "}"), "{")
	re := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + `(\{[^}]*\})? (\S+)$`)
	total, found := 0.0, false
	for _, m := range re.FindAllStringSubmatch(body, -1) {
		if labels != "" && !strings.Contains(m[1], labels) {
			continue
		}
		v, err := strconv.ParseFloat(m[2], 64)
		if err != nil {
			continue
		}
		total += v
		found = true
	}
	return total, found
}

// ingestOnce runs the command the kept demo printed to ingest a folder,
// as the producer, on one new document, and checks its vectors.
func ingestOnce(t *testing.T, ctx context.Context, k demo.Kept, report string) error {
	dir := t.TempDir()
	var text strings.Builder
	for i := range 400 {
		fmt.Fprintf(&text, "Sentence %d of the note a user adds after the demo, about the lock keeper's ledger. ", i)
	}
	if err := os.WriteFile(filepath.Join(dir, "note.txt"), []byte(text.String()), 0o644); err != nil {
		return err
	}
	var command string
	for _, line := range strings.Split(report, "\n") {
		if strings.HasSuffix(line, "--source mine "+demo.IngestPlaceholder) {
			command = strings.Replace(strings.TrimSpace(line), demo.IngestPlaceholder, dir, 1)
		}
	}
	if command == "" {
		return fmt.Errorf("the kept demo printed no command to ingest a folder:\n%s", report)
	}
	if out, err := exec.CommandContext(ctx, "sh", "-c", command).CombinedOutput(); err != nil {
		return fmt.Errorf("%s: %v\n%s", command, err, out)
	}
	pool, err := pgxpool.New(ctx, k.OwnerURL)
	if err != nil {
		return err
	}
	defer pool.Close()
	var chunks, stored int
	deadline := time.Now().Add(time.Minute)
	for {
		err := pool.QueryRow(ctx, `
			SELECT d.chunk_count, (SELECT count(*) FROM chunk_embeddings e WHERE e.doc_id = d.doc_id)
			FROM documents d WHERE d.source_id = 'mine' AND d.status = 'ready'`).Scan(&chunks, &stored)
		if err == nil && chunks > 1 && stored == chunks {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the new document did not become ready with a vector per chunk within a minute (%d chunks, %d vectors, %v)", chunks, stored, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	var perChunk, other, kept int
	if err := pool.QueryRow(ctx, `
		SELECT (SELECT count(*) FROM (SELECT chunk_index FROM chunk_embeddings e JOIN documents d USING (doc_id)
		                               WHERE d.source_id = 'mine' GROUP BY chunk_index HAVING count(*) <> 1) x),
		       (SELECT count(*) FROM generation_embeddings g JOIN documents d USING (doc_id) WHERE d.source_id = 'mine'),
		       (SELECT count(*) FROM index_generations WHERE status <> 'dropped')`).Scan(&perChunk, &other, &kept); err != nil {
		return err
	}
	if perChunk != 0 || other != 0 || kept != 1 {
		return fmt.Errorf("the new document's %d chunks: %d with other than one vector, %d vectors in later generations; %d generations kept up to date, want 1", chunks, perChunk, other, kept)
	}
	return nil
}

// keyScan runs the commands the kept demo printed to key in the low
// scan's text: it saves what OCR recognised, types the page's text over
// it as the person keying it would, and stores it. The scan's document
// then becomes ready with the keyed text, its dead letter resolved.
func keyScan(t *testing.T, ctx context.Context, k demo.Kept, report string) error {
	var show, correct string
	for _, line := range strings.Split(report, "\n") {
		switch line = strings.TrimSpace(line); {
		case strings.Contains(line, " dlq show ") && strings.HasSuffix(line, "> "+demo.KeyedFile):
			show = line
		case strings.Contains(line, " dlq correct --id "):
			correct = line
		}
	}
	if show == "" || correct == "" {
		return fmt.Errorf("the kept demo printed no commands to key in the low scan's text:\n%s", report)
	}
	dir := t.TempDir()
	if err := runIn(ctx, dir, show); err != nil {
		return err
	}
	keyed := filepath.Join(dir, demo.KeyedFile)
	if b, err := os.ReadFile(keyed); err != nil || len(strings.Fields(string(b))) == 0 {
		return fmt.Errorf("%s saved no recognised text (%q, %v)", show, b, err)
	}
	const page2 = "This is page 2 of the sample report. " + scantest.Sentence2
	if err := os.WriteFile(keyed, []byte(page2+"\n"), 0o644); err != nil {
		return err
	}
	if err := runIn(ctx, dir, correct); err != nil {
		return err
	}
	return awaitKeyed(ctx, k, page2)
}

// runIn runs a command line the demo printed with sh, in dir.
func runIn(ctx context.Context, dir, command string) error {
	cmd := exec.CommandContext(ctx, "sh", "-c", command)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s: %v\n%s", command, err, out)
	}
	return nil
}

// awaitKeyed waits for the low scan's document to be ready with text,
// and its dead letter resolved, for a minute at most.
func awaitKeyed(ctx context.Context, k demo.Kept, text string) error {
	pool, err := pgxpool.New(ctx, k.OwnerURL)
	if err != nil {
		return err
	}
	defer pool.Close()
	var status, stored string
	var open int
	deadline := time.Now().Add(time.Minute)
	for {
		err := pool.QueryRow(ctx, `
			SELECT d.status, coalesce((SELECT string_agg(e.text, ' ') FROM chunk_embeddings e WHERE e.doc_id = d.doc_id), ''),
			       (SELECT count(*) FROM dead_letters l WHERE l.doc_id = d.doc_id AND l.resolved_at IS NULL)
			FROM documents d WHERE d.source_id = $1 AND d.source_native_id = $2`, demo.ScanSource, demo.LowScan).Scan(&status, &stored, &open)
		if err == nil && status == "ready" && strings.TrimSpace(stored) == text && open == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the keyed scan did not become ready with its keyed text within a minute: %s, %q stored, %d open dead letters (%v)", status, stored, open, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
