package bench

import (
	"math"
	"testing"
)

// The wait-bound ideal is the longer of the clean run's time and every
// 429's wait shared over the pull loops: while one loop waits, the
// others go on at the clean run's pace, so the waits and the work
// overlap.
func TestWaitBoundIdeal(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		chunks      int
		clean, n429 float64
		loops       int
		want        float64
	}{
		{10_000, 2_000, 0, 6, 2_000},
		{10_000, 2_000, 24, 6, 2_000}, // 5 s of work hide 4 s of waits per loop
		{10_000, 2_000, 30, 6, 2_000}, // 5 s of work, 30 waits of 1 s over 6 loops
		{10_000, 2_000, 60, 6, 1_000}, // 10 s of waits per loop: wait-bound
		{10_000, 0, 30, 6, 0},
	} {
		if got := waitBoundIdeal(c.chunks, c.clean, c.n429, 1, c.loops); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("waitBoundIdeal(%d, %v, %v, 1, %d) = %v, want %v", c.chunks, c.clean, c.n429, c.loops, got, c.want)
		}
	}
}

// The storm is set against its ideal from what embed-sim counted, the
// realistic documents and the single-chunk pipeline against the parts'
// CPU, and the search against its p99 at the smallest ef_search that
// reaches the recall target at 1,000,000 clustered rows.
func TestTargetRatios(t *testing.T) {
	t.Parallel()
	r := &Report{PartsCPUPer1k: 0.2, PartsCPUPer1kWithBookkeeping: 0.4, DocsPartsCPUPer1k: 0.25, Runs: []RunResult{
		{Scenario: ScenarioPipeline384, Chunks: 10_000, Reps: []RepResult{{}}, Median: Summary{ChunksPerSec: 2_000, TotalCPUPer1k: 0.6}},
		{Scenario: ScenarioPipelineDocs, Chunks: 10_000, Reps: []RepResult{{}}, Median: Summary{ChunksPerSec: 2_500, TotalCPUPer1k: 0.38}},
		{Scenario: ScenarioStorm429, Chunks: 10_000, Reps: []RepResult{{}}, Median: Summary{ChunksPerSec: 900, EmbedRequests: 300, Embed429: 60}},
	}, VectorSearch: &VectorSearch{Results: []SearchResult{
		{Rows: 1_000_000, Distribution: distUniform, MinEfSearch: 320, Sweep: []EfSearchResult{{EfSearch: 320, Recall: 0.96, P99Ms: 40}}},
		{Rows: 1_000_000, Distribution: distTopics, MinEfSearch: 80, Sweep: []EfSearchResult{
			{EfSearch: 40, Recall: 0.9, P99Ms: 8}, {EfSearch: 80, Recall: 0.97, P99Ms: 12}, {EfSearch: 160, Recall: 0.99, P99Ms: 30}}},
	}}, Extraction: []Extraction{{Kind: "pdf", PerCore: 1.05}, {Kind: "ocr", PerCore: 0.85}}}
	r.StormIdeal = stormIdeal(r)
	if r.StormIdeal == nil || r.StormIdeal.ChunksPerSec != 1_000 || r.StormIdeal.Observed429Rate != 0.2 {
		t.Fatalf("storm ideal %+v, want 1,000 chunks/s from 60 of 300 requests answered 429", r.StormIdeal)
	}
	got := map[string]Ratio{}
	for _, q := range ratios(r, Config{Chunks: 10_000, Only: []string{ScenarioSearch}, SearchSizes: []int{1_000_000}}) {
		got[q.Name] = q
	}
	for name, want := range map[string]struct {
		value float64
		met   bool
	}{
		RatioStormIdeal:     {0.9, true},
		RatioSingleChunkCPU: {1.5, false},
		RatioDocsCPU:        {1.9, true},
		RatioSearchP99:      {12, true},
		RatioPDFPerCore:     {1.05, true},
		RatioOCRPerCore:     {0.85, false},
	} {
		q := got[name]
		if math.Abs(q.Value-want.value) > 1e-9 || q.Met == nil || *q.Met != want.met {
			t.Errorf("%s: %+v, want %v met=%v", name, q, want.value, want.met)
		}
	}
	if q := got[RatioDocsCPUSameChunks]; math.Abs(q.Value-1.52) > 1e-9 || q.Met != nil {
		t.Errorf("%s: %+v, want 1.52, reported only", RatioDocsCPUSameChunks, q)
	}
	if q := got[RatioPoison]; q.Value != 0 || q.Met != nil {
		t.Errorf("poison ratio without a poison run: %+v", q)
	}
	for _, want := range TargetRatios {
		if q, ok := got[want.Name]; !ok || q.Target != want.Target {
			t.Errorf("ratio %q: %+v, want target %s", want.Name, q, want.Target)
		}
	}
}
