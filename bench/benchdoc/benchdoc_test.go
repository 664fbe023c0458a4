package benchdoc

import (
	"os"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/dev/bench"
)

// The committed page is what the committed report renders to: the
// figures on docs/benchmarks.md are the bench's, never typed by hand.
func TestPageMatchesTheCommittedReport(t *testing.T) {
	r, err := Load("../results/latest.json")
	if err != nil {
		t.Fatal(err)
	}
	want, err := Render(r)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("../../docs/benchmarks.md")
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		g, w := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
		for i := 0; i < len(g) && i < len(w); i++ {
			if g[i] != w[i] {
				t.Fatalf("docs/benchmarks.md differs from what bench/results/latest.json renders, at line %d:\n  committed: %q\n  rendered:  %q\nregenerate it with: cd bench && go run ./cmd/benchdoc", i+1, g[i], w[i])
			}
		}
		t.Fatalf("docs/benchmarks.md differs in length from what bench/results/latest.json renders (%d lines, want %d); regenerate it with: cd bench && go run ./cmd/benchdoc", len(g), len(w))
	}
}

// A report with the realistic-documents run, the storm's ideal and the
// search's recall shows them; one without says they were not measured
// rather than showing a figure.
func TestNewFiguresRenderOrSayNotMeasured(t *testing.T) {
	met := true
	r := &bench.Report{
		DocsCorpus: &bench.DocsStats{Documents: 1250, Chunks: 10_003, MinChunks: 1, MedianChunks: 8, MaxChunks: 40},
		StormIdeal: &bench.StormIdeal{Requests: 200, Answered429: 40, Observed429Rate: 0.2, RetryAfterSeconds: 1, PullLoops: 6,
			CleanChunksPerSec: 2500, ChunksPerSec: 1500},
		Bulk: &bench.BulkStats{Chunks: 10_000, MaxAge: "2s", Interval: "500ms", Validating: "200ms", InProgress: "2s", Finalizing: "200ms",
			ChunksPerSec: 900, ServiceCPUPer1k: 0.5, TotalCPUPer1k: 2, ProviderRequests: 60, Batches: 5, RequestsPerChunk: 0.006,
			LiveChunksPerSec: 1700, LiveServiceCPUPer1k: 0.4, LiveRequestsPerChunk: 0.16},
		Ratios: []bench.Ratio{{Name: bench.RatioStormIdeal, Value: 0.87, Target: "≥ 0.85", Met: &met}},
		VectorSearch: &bench.VectorSearch{Server: "PostgreSQL 17, pgvector 0.8", Results: []bench.SearchResult{{
			Rows: 100_000, Distribution: "uniform", P50Ms: 6, P99Ms: 30,
			Sweep: []bench.EfSearchResult{{EfSearch: 40, Recall: 0.08, P50Ms: 6, P99Ms: 30}, {EfSearch: 1000, Recall: 0.633, P50Ms: 83, P99Ms: 207}},
		}, {
			Rows: 1_000_000, Distribution: "clustered", MinEfSearch: 80, P50Ms: 3, P99Ms: 9,
			Sweep: []bench.EfSearchResult{{EfSearch: 40, Recall: 0.91, P50Ms: 3, P99Ms: 9}, {EfSearch: 80, Recall: 0.962, P50Ms: 4, P99Ms: 12}},
		}}},
	}
	page := render(t, r)
	for _, want := range []string{
		"1250 documents, 10003 chunks, 1–40 chunks a document (median 8)",
		"40 of 200 requests answered 429 (20.0%), `Retry-After: 1`, 6 pull loops, clean 2,500 chunks/s: wait-bound ideal 1,500 chunks/s",
		"| 429 storm / wait-bound ideal | 0.87 | ≥ 0.85 | met |",
		"| 1,000,000 | clustered | 80 | 0.962 | 4.0 | 12.0 |",
		"| 30.0 | none up to 1000 |",
		"| " + bench.RatioSingleChunkCPU + " | not measured in this report | ≤ 1.25 | — |",
		"- bulk: 10000 chunks through the Batch API in 5 batch(es), BULK_MAX_AGE 2s, BULK_INTERVAL 500ms, batches validating 200ms, " +
			"in progress 2s, finalizing 200ms: 900 chunks/s, 0.500 CPU s per 1k chunks in the consumers and relay (2.000 in all), " +
			"60 provider requests, 0.0060 a chunk; the live endpoint asked 0 times during the load; live, the same corpus: 1,700 chunks/s, " +
			"0.400 CPU s per 1k chunks in the consumers, 0.1600 requests a chunk",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q:\n%s", want, page)
		}
	}
	// A report from before these figures existed says so.
	older := *r
	older.DocsCorpus, older.StormIdeal, older.Bulk, older.Ratios = nil, nil, nil, nil
	page = render(t, &older)
	for _, want := range []string{"pipeline-docs (documents of 1–40 chunks): not measured in this report",
		"429 storm's wait-bound ideal: not measured in this report",
		"bulk (a source in bulk mode, through the Batch API, against the live load): not measured in this report",
		"| " + bench.RatioStormIdeal + " | not measured in this report | ≥ 0.85 | — |"} {
		if !strings.Contains(page, want) {
			t.Errorf("an older report's page lacks %q", want)
		}
	}
}

func render(t *testing.T, r *bench.Report) string {
	t.Helper()
	b, err := Render(r)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A missed target gets a paragraph of what limits it, in the report's own
// figures; a met one gets none, and a report that misses nothing has no
// such section.
func TestMissedTargetsSayWhatLimitsThem(t *testing.T) {
	missed, met := false, true
	r := &bench.Report{
		DocsPartsCPUPer1k: 0.3, DocsPartsCPUPer1kWithBookkeeping: 0.66,
		Runs: []bench.RunResult{{Scenario: bench.ScenarioPipelineDocs, Chunks: 10_000, Median: bench.Summary{TotalCPUPer1k: 0.9,
			CPUPer1kByProcess: map[string]float64{"producer": 0.1, "consumer-1": 0.1, "consumer-2": 0.1, "embed-sim": 0.1, "postgres": 0.4, "nats": 0.1}}}},
		StormIdeal: &bench.StormIdeal{Answered429: 40, RetryAfterSeconds: 1, PullLoops: 6, Seconds: 8, IdealSeconds: 6.5,
			HeldPerWaitMs: 225, CleanBatchMs: 140},
		VectorSearch: &bench.VectorSearch{Results: []bench.SearchResult{{Rows: 1_000_000, Distribution: "topics",
			Sweep: []bench.EfSearchResult{{EfSearch: 320, Recall: 0.93, P99Ms: 40}, {EfSearch: 1000, Recall: 0.947, P99Ms: 87}}}}},
		Ratios: []bench.Ratio{
			{Name: bench.RatioDocsCPU, Value: 3, Target: "≤ 2", Met: &missed},
			{Name: bench.RatioStormIdeal, Value: 0.8, Target: "≥ 0.85", Met: &missed},
			{Name: bench.RatioSearchP99, Value: 87, Target: "≤ 25 ms", Met: &missed},
			{Name: bench.RatioSingleChunkCPU, Value: 1.2, Target: "≤ 1.25", Met: &met},
		},
	}
	for _, name := range bench.DocsFourParts {
		r.Ceilings = append(r.Ceilings, bench.CeilingResult{Name: name, Median: 1000, CPUPer1k: 0.165,
			CPUPer1kByProcess: map[string]float64{"clients": 0.03, "embed-sim": 0.02, "postgres": 0.1, "nats": 0.015}})
	}
	page := render(t, r)
	for _, want := range []string{
		"### What limits the targets missed",
		"By process, run against parts: Sluice's own code 0.300 against 0.120, embed-sim 0.100 against 0.080, PostgreSQL 0.400 against 0.400, NATS 0.100 against 0.060.",
		"the three parts cost 0.300 CPU s per 1,000 chunks and the guarantees' bookkeeping alone 0.360 more, so the four parts together are 2.20× the three; the run spends 0.900, 1.36× the four parts. The target lies below what the bookkeeping costs",
		"The storm took 8.00 s against an ideal 6.50 s: each of its 40 waits of 1 s held its pull loop 225 ms longer than the wait itself, where a clean batch takes 140 ms",
		"Over 1,000,000 topic vectors no ef_search pgvector allows reached recall@10 0.95: the best, 0.947 at ef_search 1000, took 87.0 ms at p99",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q:\n%s", want, page)
		}
	}
	if strings.Contains(page, "**"+bench.RatioSingleChunkCPU) {
		t.Error("a met target has a paragraph of what limits it")
	}
	for i := range r.Ratios {
		r.Ratios[i].Met = &met
	}
	if page := render(t, r); strings.Contains(page, "What limits") {
		t.Error("a report that misses no target has a section on what limits them")
	}
}
