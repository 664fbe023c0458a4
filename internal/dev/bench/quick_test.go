//go:build !race

// The quick runs of the benchmark run without the race detector (`make
// test` runs them in a pass of their own, beside the corpus generators'
// shape tests): they measure the pipeline, which the detector slows
// several fold, and the code they drive is raced in its own packages'
// tests.

package bench_test

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/dev/bench"
)

// The quick mode runs every scenario end to end, River, a small scale run
// and the latency-bound runs included, and writes a report with every
// section and sane values.
// Speed is not asserted: the machine is shared and noisy.
func TestQuickRunReportsEverySection(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the whole benchmark in quick mode")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out := filepath.Join(t.TempDir(), "latest.json")
	var stdout, stderr bytes.Buffer
	args := []string{"--quick", "--out", out, "--scale-chunks", "600",
		"--only", "ceilings,pipeline-384,pipeline-768,pipeline-docs,poison,storm-429,sync-always,naive,river,scale,scale-out,latency-100ms,search,reuse," +
			"migration,backfill-latency,bulk,bulk-reuse,extract"}
	if err := bench.Main(ctx, args, &stdout, &stderr); err != nil {
		t.Fatalf("sluice-bench %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	var r bench.Report
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("results are not JSON: %v", err)
	}
	checkCeilings(t, &r)
	checkRuns(t, &r)
	checkRatios(t, &r)
	checkScale(t, &r)
	checkSearch(t, &r)
	checkReuse(t, &r)
	checkModelChange(t, &r)
	checkBulk(t, &r)
	checkBulkReuse(t, &r)
	checkExtraction(t, &r)
	md := stdout.String()
	for _, want := range []string{"## Ceilings", "## Runs", "## Ratios", "| pipeline-384 |", "| pipeline-768 |",
		"| poison |", "| storm-429 |", "| sync-always |", "sync_interval always / default", "| naive |", "| river |", "| scale |", "pipeline / combined ceiling",
		"| bookkeeping |", "pipeline / combined ceiling incl. bookkeeping", "## CPU by process", "| four parts alone |", "pipeline CPU / Σ three parts' CPU",
		"pipeline / naive", "pipeline / River", "poison / clean", "429 storm / clean", bench.RatioStormIdeal, "429 storm: ", "RSS@",
		"| pipeline-docs |", bench.RatioSingleChunkCPU, bench.RatioDocsCPU,
		"| scale-out-1 |", "| scale-out-4 |", "4 / 1 consumer processes", "| latency-100ms |", "| latency-100ms-bound |", "| latency-100ms-raised |",
		"latency-bound / ideal (all defaults)", "latency-bound / ideal (latency-bound setting)", "## PostgreSQL storage per chunk",
		"| scale | chunk_embeddings |", "## Vector index and search", "| reuse |", "\nreuse: ", bench.RatioReuseInputs, bench.RatioReuseEdit,
		"| migration |", "\nmigration: ", bench.RatioMigrationCPU, bench.RatioMigrationWall, "| backfill-latency |", "\nbackfill-latency: ",
		bench.RatioBackfillLatencyP99, "| bulk |", "\nbulk: ", bench.RatioBulkRequests,
		"| bulk-reuse |", "\nbulk-reuse: ", bench.RatioBulkReuseInputs, "## Extraction", "\nextract pdf: ", "\nextract ocr: ", bench.RatioPDFPerCore, bench.RatioOCRPerCore} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown report lacks %q:\n%s", want, md)
		}
	}
}

func checkCeilings(t *testing.T, r *bench.Report) {
	t.Helper()
	var names []string
	for _, c := range r.Ceilings {
		names = append(names, c.Name)
		if c.Median <= 0 || c.CPUPer1k <= 0 {
			t.Errorf("ceiling %s: %v/s, %v CPU s per 1k", c.Name, c.Median, c.CPUPer1k)
		}
		checkCeilingProcesses(t, c)
	}
	if got, want := strings.Join(names, ","), "embed-float,embed-base64,jetstream,postgres,bookkeeping,embed-base64-docs,jetstream-docs,postgres-docs,bookkeeping-docs"; got != want {
		t.Errorf("ceilings %s, want %s", got, want)
	}
	// A fourth part can only lower the combined ceiling and add CPU.
	if r.CombinedCeiling <= 0 || r.CombinedCeilingWithBookkeeping <= 0 || r.CombinedCeilingWithBookkeeping >= r.CombinedCeiling {
		t.Errorf("combined ceiling %v, with bookkeeping %v", r.CombinedCeiling, r.CombinedCeilingWithBookkeeping)
	}
	if r.PartsCPUPer1k <= 0 || r.PartsCPUPer1kWithBookkeeping <= r.PartsCPUPer1k {
		t.Errorf("parts' CPU s per 1k %v, with bookkeeping %v", r.PartsCPUPer1k, r.PartsCPUPer1kWithBookkeeping)
	}
	var sum, servers float64
	for _, v := range r.PartsCPUPer1kByProcess {
		sum += v
	}
	for _, c := range r.Ceilings {
		servers += c.CPUPer1k - c.CPUPer1kByProcess["clients"]
	}
	if servers <= 0 {
		t.Errorf("no server CPU in any ceiling: %+v", r.Ceilings)
	}
	if math.Abs(sum-r.PartsCPUPer1kWithBookkeeping) > 1e-9 {
		t.Errorf("four parts' CPU by process %v sums to %v, not their CPU %v", r.PartsCPUPer1kByProcess, sum, r.PartsCPUPer1kWithBookkeeping)
	}
}

// checkCeilingProcesses checks that a one-repetition ceiling's CPU by
// process adds up to its CPU, with this process's share measured. A quick
// run's ceilings are too short for every server to use a clock tick, so
// servers are checked over all the ceilings, in checkCeilings.
func checkCeilingProcesses(t *testing.T, c bench.CeilingResult) {
	t.Helper()
	var sum float64
	for _, v := range c.CPUPer1kByProcess {
		sum += v
	}
	if len(c.CPUPer1kByProcess) != 4 || math.Abs(sum-c.CPUPer1k) > 1e-9 || c.CPUPer1kByProcess["clients"] <= 0 {
		t.Errorf("ceiling %s: CPU %v s per 1k, by process %v", c.Name, c.CPUPer1k, c.CPUPer1kByProcess)
	}
}

func checkRuns(t *testing.T, r *bench.Report) {
	t.Helper()
	want := map[string]bool{"pipeline-384": true, "pipeline-768": true, "pipeline-docs": true, "poison": true, "storm-429": true,
		"naive": true, "river": true, "scale": true, "scale-out-1": true, "scale-out-2": true, "scale-out-4": true,
		"latency-100ms": true, "latency-100ms-bound": true, "latency-100ms-raised": true, "reuse": true,
		"migration": true, "backfill-latency": true, "bulk": true}
	for _, run := range r.Runs {
		delete(want, run.Scenario)
		m := run.Median
		// A latency runs from a message's stream timestamp to its later
		// store: the bench refuses a negative one (measure), so P50 is
		// above zero by definition, not by luck. The migration stores no
		// fresh chunk and has none.
		latency := m.P50Ms > 0 || run.Scenario == "migration"
		if len(run.Reps) != 1 || m.ChunksPerSec <= 0 || !latency || m.P99Ms < m.P50Ms ||
			m.ServiceCPUPer1k <= 0 || m.TotalCPUPer1k < m.ServiceCPUPer1k {
			t.Errorf("%s: implausible figures %+v", run.Scenario, m)
		}
		if m.Stored+m.Parked != run.Chunks {
			t.Errorf("%s: %d stored + %d parked of %d chunks", run.Scenario, m.Stored, m.Parked, run.Chunks)
		}
		for _, p := range run.Reps[0].Processes {
			if p.PeakRSSMiB <= 0 || p.CPUSeconds < 0 || p.CPUSeconds == 0 && !inWindow(run.Scenario) {
				t.Errorf("%s: process %+v has no RSS or CPU", run.Scenario, p)
			}
		}
		checkCPU(t, run)
		wantParked := 0
		if run.Scenario == "poison" {
			wantParked = run.Chunks * 5 / 100
		}
		if run.Scenario != "storm-429" && m.Parked != wantParked {
			t.Errorf("%s: %d parked, want %d", run.Scenario, m.Parked, wantParked)
		}
	}
	for name := range want {
		t.Errorf("no %s run in the report", name)
	}
}

// inWindow reports whether scenario's CPU by process is read from a
// window of a fleet that runs on (/proc's clock ticks of 10 ms) rather
// than from each process's rusage at its exit. In a quick run such a
// window is short enough for a process, embed-sim above all, to spend
// less than a tick in it, so 0 is a true reading there; the run's CPU
// as a whole is still checked.
func inWindow(scenario string) bool {
	return scenario == bench.ScenarioMigration || scenario == bench.ScenarioBackfillLatency
}

// checkCPU checks a run's CPU by process, and that a run at the ceilings'
// dimension is set against their parts.
func checkCPU(t *testing.T, run bench.RunResult) {
	t.Helper()
	m := run.Median
	if len(m.CPUPer1kByProcess) != len(run.Reps[0].Processes)+2 {
		t.Errorf("%s: CPU of %v, want every process, postgres and nats", run.Scenario, m.CPUPer1kByProcess)
	}
	for role, v := range m.CPUPer1kByProcess {
		// River's peer never talks to NATS, which may idle through its run.
		if v < 0 || v == 0 && !(role == "nats" && run.Scenario == "river") && !inWindow(run.Scenario) {
			t.Errorf("%s: %s used %v CPU s per 1k", run.Scenario, role, v)
		}
	}
	if (run.Dims == 384) != (run.CPUOverParts > 0) {
		t.Errorf("%s at %d dims: CPU over parts %v", run.Scenario, run.Dims, run.CPUOverParts)
	}
}

func checkRatios(t *testing.T, r *bench.Report) {
	t.Helper()
	if len(r.Ratios) < 6 {
		t.Errorf("%d ratios", len(r.Ratios))
	}
	for _, q := range r.Ratios {
		// The migration's CPU to its last vector is read from /proc in
		// 10 ms ticks over a window of a quick run's 200 chunks: it may
		// truly read 0, as the windowed scenarios' CPU by process may.
		if q.Value <= 0 && q.Name != bench.RatioMigrationVectorsCPU {
			t.Errorf("ratio %q has no value", q.Name)
		}
		if q.Target != "" && q.Met == nil {
			t.Errorf("ratio %q has a target but no verdict", q.Name)
		}
	}
}

// checkScale checks what the scale run adds: its tables' sizes.
func checkScale(t *testing.T, r *bench.Report) {
	t.Helper()
	for _, run := range r.Runs {
		if run.Scenario != "scale" || len(run.Reps) == 0 {
			continue
		}
		if got := len(run.Reps[0].Storage); got != 3 {
			t.Errorf("scale run: sizes of %d tables, want chunk_embeddings, ingest_manifest, documents", got)
		}
		for _, s := range run.Reps[0].Storage {
			if s.TableBytes <= 0 || s.IndexBytes <= 0 {
				t.Errorf("scale run: table %+v has no size", s)
			}
		}
	}
}

// checkSearch checks the vector index and searches where pgvector is at
// hand: clustered vectors at each search size and uniform ones at the
// smallest, and recall and latency at every ef_search tried.
func checkSearch(t *testing.T, r *bench.Report) {
	t.Helper()
	vs := r.VectorSearch
	switch {
	case vs == nil:
		t.Fatal("no vector search in the report")
	case vs.Skipped != "":
		t.Logf("vector search skipped: %s", vs.Skipped)
	case len(vs.Results) != len(r.Settings.SearchSizes)+2:
		t.Errorf("vector search: %d results at sizes %v, want topics at each, uniform and clustered at the smallest", len(vs.Results), r.Settings.SearchSizes)
	}
	for _, s := range vs.Results {
		if !slices.Contains(r.Settings.SearchSizes, s.Rows) || s.Searches <= 0 || s.P50Ms <= 0 || s.P99Ms < s.P50Ms ||
			s.IndexBuildSeconds <= 0 || s.IndexBytes <= 0 || len(s.Sweep) < 3 {
			t.Errorf("vector search: implausible figures %+v", s)
		}
		for _, e := range s.Sweep {
			if e.Recall <= 0 || e.Recall > 1 || e.P50Ms <= 0 || e.P99Ms < e.P50Ms {
				t.Errorf("vector search %d %s at ef_search %d: implausible %+v", s.Rows, s.Distribution, e.EfSearch, e)
			}
		}
		// More candidates never find fewer of the exact top 10 by much.
		if last := s.Sweep[len(s.Sweep)-1]; last.Recall < s.Sweep[0].Recall-0.05 {
			t.Errorf("vector search %d %s: recall %v at ef_search %d, below %v at %d", s.Rows, s.Distribution,
				last.Recall, last.EfSearch, s.Sweep[0].Recall, s.Sweep[0].EfSearch)
		}
	}
}

// checkReuse checks that the reuse run counted what both of its runs
// sent to the embedder: some of the chunks, never more than all, and
// fewer for the edit than for the corpus.
func checkReuse(t *testing.T, r *bench.Report) {
	t.Helper()
	s := r.Reuse
	if s == nil {
		t.Fatal("no reuse figures in the report")
	}
	c := s.Corpus
	if c.RepeatedChunks <= 0 || c.DistinctChunks >= c.Chunks || s.ProviderInputs < float64(c.DistinctChunks) ||
		s.ProviderInputs > float64(c.Chunks) || s.EditInputs < float64(c.EditedNewChunks) || s.EditInputs >= s.ProviderInputs {
		t.Errorf("reuse: implausible figures %+v", s)
	}
}

// checkModelChange checks what the migration and backfill-latency runs
// add: a generation backfilled to ready with nothing owed or parked, and
// fresh documents' latency measured with and without a backfill.
func checkModelChange(t *testing.T, r *bench.Report) {
	t.Helper()
	if m := r.Migration; m == nil || m.Owed != 0 || m.Parked != 0 || m.ProviderInputs < float64(m.Chunks) ||
		m.VectorsSeconds <= 0 || m.ReadySeconds < m.VectorsSeconds || m.CPURatio <= 0 || m.WallRatio <= 0 {
		t.Errorf("migration %+v: want a generation ready with nothing owed or parked, every chunk sent, and both ratios", m)
	}
	if b := r.BackfillLatency; b == nil || b.WithoutP99Ms <= 0 || b.WithP99Ms <= 0 || b.Backfilled <= 0 || b.P99Ratio <= 0 {
		t.Errorf("backfill latency %+v: want both loads' latency and vectors backfilled during the second", b)
	}
}

// checkBulk checks what the bulk run adds: every chunk admitted to the
// ledger and sent through batches alone, in as many provider requests
// a chunk as its batches' steps take, beside the live load's.
func checkBulk(t *testing.T, r *bench.Report) {
	t.Helper()
	b := r.Bulk
	if b == nil {
		t.Fatal("no bulk figures in the report")
	}
	// A batch takes at least an upload, a create, a poll and its output
	// file's content.
	if b.LiveRequests != 0 || b.Admitted < float64(b.Chunks) || b.Batches < 1 || b.ProviderRequests < 4*b.Batches ||
		b.RequestsPerChunk <= 0 || b.LiveRequestsPerChunk <= 0 || b.RequestsRatio <= 0 || b.ServiceCPUPer1k <= 0 || b.InputTokensPerChunk <= 0 {
		t.Errorf("bulk %+v: want every chunk admitted, the live endpoint never asked, and requests per chunk beside the live load's", b)
	}
}

// checkBulkReuse checks that bulk mode paid for each distinct text of
// the reuse corpus once: its request lines are the corpus's distinct
// texts, fewer than its chunks.
func checkBulkReuse(t *testing.T, r *bench.Report) {
	t.Helper()
	b := r.BulkReuse
	if b == nil {
		t.Fatal("no bulk-reuse figures in the report")
	}
	if b.DistinctChunks <= 0 || b.DistinctChunks >= b.Chunks || b.RequestLines != float64(b.DistinctChunks) ||
		b.InputsRatio != b.RequestLines/float64(b.Chunks) {
		t.Errorf("bulk-reuse %+v: want one request line per distinct text, fewer than the chunks", b)
	}
}

// checkExtraction checks that both kinds of file were read every way,
// by as many tool processes at once as there are workers;
// checkRatios checks the ratios.
func checkExtraction(t *testing.T, r *bench.Report) {
	t.Helper()
	var kinds []string
	for _, e := range r.Extraction {
		kinds = append(kinds, e.Kind)
		m := e.Median
		if e.Skipped != "" || e.Words < 10*e.Pages || m.AlonePagesPerSec <= 0 || m.ParallelPagesPerSec <= 0 || m.WorkersPagesPerSec <= 0 ||
			m.AlonePeakRSSMiB <= 0 || m.WorkerPeakRSSMiB <= 0 {
			t.Errorf("extract %s: figures missing: %+v", e.Kind, e)
		}
		// A pdftotext lives for tens of milliseconds and may end between
		// two looks; a Tesseract for seconds, one a worker at a time.
		if m.Concurrent < 1 || m.Concurrent > e.Workers || (e.Kind == "ocr" && m.Concurrent != e.Workers) {
			t.Errorf("extract %s: %d %s processes seen at once, want one a worker (%d)", e.Kind, m.Concurrent, e.Tool, e.Workers)
		}
	}
	if got := strings.Join(kinds, ","); got != "pdf,ocr" {
		t.Errorf("extraction kinds %s, want pdf,ocr", got)
	}
}
