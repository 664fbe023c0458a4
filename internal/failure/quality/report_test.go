package quality_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/sluicehq/sluice/internal/dev/testenv"
	"github.com/sluicehq/sluice/internal/failure/quality"
	"github.com/sluicehq/sluice/internal/failure/webhook"
)

func TestMain(m *testing.M) { testenv.Main(m) }

var day = time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)

// seed records two sources' runs and dead letters on the report's day,
// and a run and a dead letter the day before, which it must leave out.
func seed(t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	for _, sql := range []string{
		`INSERT INTO ingest_runs (run_id, source_id, started_at, status, documents, published, stored, parked) VALUES
			('r1', 'wiki', $1::timestamptz + interval '1 hour', 'completed_with_failures', 10, 100, 97, 3),
			('r2', 'wiki', $1::timestamptz + interval '5 hours', 'completed', 2, 20, 20, 0),
			('r3', 'tickets', $1::timestamptz + interval '2 hours', 'completed_with_failures', 5, 50, 49, 1),
			('old', 'wiki', $1::timestamptz - interval '1 hour', 'completed', 1, 1000, 0, 1000)`,
		`INSERT INTO dead_letters (dead_letter_id, doc_id, chunk_index, version, source_id, source_native_id, run_id, disposition,
			error_class, stage, attempts, last_outbox_id, first_failed_at, last_failed_at, resolved_at) VALUES
			('a', 'd1', 0, 1, 'wiki', 'n1', 'r1', 'quarantine', 'bad_request', 'embed', 1, 1, $1::timestamptz + interval '1 hour', $1::timestamptz + interval '1 hour', NULL),
			('b', 'd1', 1, 1, 'wiki', 'n1', 'r1', 'quarantine', 'bad_request', 'embed', 1, 1, $1::timestamptz + interval '1 hour', $1::timestamptz + interval '1 hour', NULL),
			('c', 'd2', 0, 1, 'wiki', 'n2', 'r1', 'retry', 'transient_exhausted', 'embed', 5, 1, $1::timestamptz + interval '1 hour', $1::timestamptz + interval '2 hours', $1::timestamptz + interval '3 hours'),
			('e', 'd3', 0, 1, 'tickets', 'n3', 'r3', 'quarantine', 'context_length_exceeded', 'embed', 1, 1, $1::timestamptz + interval '2 hours', $1::timestamptz + interval '2 hours', NULL),
			('z', 'd9', 0, 1, 'wiki', 'n9', 'old', 'quarantine', 'not_found', 'embed', 1, 1, $1::timestamptz - interval '1 hour', $1::timestamptz - interval '1 hour', NULL)`,
	} {
		if _, err := pool.Exec(t.Context(), sql, day); err != nil {
			t.Fatal(err)
		}
	}
}

func TestBuildSumsEachSourceOverItsWindow(t *testing.T) {
	t.Parallel()
	pool := testenv.NewDatabase(t).Pool
	seed(t, pool)
	rep, err := quality.Build(t.Context(), pool, day, day.Add(24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Sources) != 2 || rep.Sources[0].SourceID != "tickets" || rep.Sources[1].SourceID != "wiki" {
		t.Fatalf("sources %+v; want tickets and wiki, in that order", rep.Sources)
	}
	w := rep.Sources[1]
	if w.Runs != 2 || w.Documents != 12 || w.Published != 120 || w.Stored != 117 || w.Parked != 3 {
		t.Errorf("wiki runs %+v; want 2 runs, 12 documents, 120 published, 117 stored, 3 parked (yesterday's run left out)", w)
	}
	if w.ParkedShare != 3.0/120 {
		t.Errorf("wiki parked share %v, want %v", w.ParkedShare, 3.0/120)
	}
	if w.DeadLetters != 3 || w.Open != 2 || w.WorstAttempts != 5 || w.ByClass["bad_request"] != 2 || w.ByClass["transient_exhausted"] != 1 || len(w.ByClass) != 2 {
		t.Errorf("wiki dead letters %+v; want 3 (2 bad_request, 1 transient_exhausted), 2 open, worst 5 attempts", w)
	}
	if tk := rep.Sources[0]; tk.DeadLetters != 1 || tk.ByClass["context_length_exceeded"] != 1 || tk.Published != 50 {
		t.Errorf("tickets %+v", tk)
	}
	if _, err := quality.Build(t.Context(), pool, day, day); err == nil {
		t.Error("an empty window gave no error")
	}
}

// The reporter sends, on its own schedule, a report of each interval to
// the directory and to the webhook, retrying a receiver that fails.
func TestReporterSendsEachIntervalWithoutBeingAsked(t *testing.T) {
	t.Parallel()
	pool := testenv.NewDatabase(t).Pool
	seed(t, pool)
	var posts, failures atomic.Int32
	got := make(chan []byte, 10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		posts.Add(1)
		if failures.Add(1) == 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		b, _ := io.ReadAll(r.Body)
		got <- b
	}))
	defer srv.Close()
	dir := t.TempDir()
	// The clock starts on the report's day and moves a day per read, so
	// each interval's report covers one seeded day.
	var reads atomic.Int64
	now := func() time.Time { return day.Add(time.Duration(reads.Add(1)-1) * 24 * time.Hour) }
	reg := prometheus.NewRegistry()
	r := quality.New(quality.Config{Interval: 50 * time.Millisecond, Dir: dir, URL: srv.URL}, quality.Deps{DB: pool, Log: zerolog.Nop(),
		Registry: reg, Now: now, Webhook: webhook.New(webhook.Config{URL: srv.URL, MaxRetries: 2, RetryDelay: time.Millisecond})})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); r.Run(ctx) }()
	var body []byte
	select {
	case body = <-got:
	case <-time.After(30 * time.Second):
		t.Fatal("no report reached the webhook")
	}
	// The report is counted once the webhook's reply is back.
	for deadline := time.Now().Add(10 * time.Second); sentBy(t, reg)["webhook"] < 1 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	<-done
	var rep quality.Report
	if err := json.Unmarshal(body, &rep); err != nil {
		t.Fatal(err)
	}
	if !rep.Since.Equal(day) || !rep.Until.Equal(day.Add(24*time.Hour)) || len(rep.Sources) != 2 {
		t.Fatalf("first report covers [%s, %s) with %d sources; want the seeded day and its 2 sources", rep.Since, rep.Until, len(rep.Sources))
	}
	if posts.Load() < 2 {
		t.Errorf("%d posts; the receiver's 503 was not retried", posts.Load())
	}
	file := filepath.Join(dir, "quality-20261201T000000Z.json")
	written, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("the report was not written to the directory: %v", err)
	}
	if string(written) != string(body) {
		t.Error("the file and the webhook got different reports")
	}
	if sent := sentBy(t, reg); sent["dir"] < 1 || sent["webhook"] < 1 {
		t.Errorf("sluice_quality_reports_total sent %v; want the dir's and the webhook's", sent)
	}
}

// sentBy reads sluice_quality_reports_total{outcome="sent"} by destination.
func sentBy(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	sent := map[string]float64{}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if mf.GetName() == "sluice_quality_reports_total" && labels["outcome"] == "sent" {
				sent[labels["destination"]] += m.GetCounter().GetValue()
			}
		}
	}
	return sent
}

// A source's scans are in its report: the files its runs read by OCR,
// those keyed in, and the scans parked below the bar still waiting for a
// person (a resolved one no longer waits).
func TestBuildCountsScansReadAndWaiting(t *testing.T) {
	t.Parallel()
	pool := testenv.NewDatabase(t).Pool
	for _, sql := range []string{
		`INSERT INTO ingest_runs (run_id, source_id, started_at, status, documents, published, stored, parked, files_seen, files_ocr, files_keyed) VALUES
			('p1', 'permits', $1::timestamptz + interval '1 hour', 'completed_with_failures', 5, 2, 2, 3, 5, 5, 0),
			('p2', 'permits', $1::timestamptz + interval '2 hours', 'completed', 1, 1, 1, 0, 1, 0, 1)`,
		`INSERT INTO dead_letters (dead_letter_id, doc_id, chunk_index, version, source_id, source_native_id, run_id, disposition,
			error_class, stage, attempts, last_outbox_id, first_failed_at, last_failed_at, resolved_at) VALUES
			('s1', 'd1', 0, 1, 'permits', 'a.png', 'p1', 'quarantine', 'ocr_low_confidence', 'produce', 1, 1, $1::timestamptz + interval '1 hour', $1::timestamptz + interval '1 hour', NULL),
			('s2', 'd2', 0, 1, 'permits', 'b.png', 'p1', 'quarantine', 'ocr_low_confidence', 'produce', 1, 1, $1::timestamptz + interval '1 hour', $1::timestamptz + interval '1 hour', NULL),
			('s3', 'd3', 0, 1, 'permits', 'c.png', 'p1', 'quarantine', 'ocr_low_confidence', 'produce', 1, 1, $1::timestamptz + interval '1 hour', $1::timestamptz + interval '1 hour', $1::timestamptz + interval '2 hours')`,
	} {
		if _, err := pool.Exec(t.Context(), sql, day); err != nil {
			t.Fatal(err)
		}
	}
	rep, err := quality.Build(t.Context(), pool, day, day.Add(24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Sources) != 1 || rep.Sources[0].OCR != 5 || rep.Sources[0].Keyed != 1 || rep.Sources[0].WaitingForKeying != 2 {
		t.Errorf("sources %+v; want permits with 5 files read by OCR, 1 keyed, 2 waiting for a person", rep.Sources)
	}
}
