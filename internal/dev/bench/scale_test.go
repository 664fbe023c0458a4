package bench

import (
	"bytes"
	"strings"
	"testing"
)

// --scale-1m adds the 1M run and the scale run it is compared with, to
// whatever else is selected; without it neither --quick nor the defaults
// run it.
func TestScale1MIsOptIn(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args      []string
		want1M    bool
		wantScale bool
	}{
		{nil, false, true},
		{[]string{"--quick"}, false, false},
		{[]string{"--quick", "--scale-1m"}, true, true},
		{[]string{"--scale-1m", "--only", "latency-100ms"}, true, true},
		{[]string{"--only", "scale-1m"}, true, true},
	} {
		var stderr bytes.Buffer
		cfg, err := ParseFlags(c.args, &stderr)
		if err != nil {
			t.Fatalf("%q: %v", c.args, err)
		}
		if cfg.selected(ScenarioScale1M) != c.want1M || cfg.selected(ScenarioScale) != c.wantScale {
			t.Errorf("%q: selected %v, want scale-1m %v, scale %v", c.args, cfg.Only, c.want1M, c.wantScale)
		}
		if cfg.Scale1MChunks != defaultScale1MChunks {
			t.Errorf("%q: scale-1m of %d chunks", c.args, cfg.Scale1MChunks)
		}
	}
}

// rssGrowth names the service that grew most between two runs, leaving
// out embed-sim, which is not under test.
func TestRSSGrowthPicksWorstService(t *testing.T) {
	t.Parallel()
	run := func(name string, rss map[string]float64) RunResult {
		return RunResult{Scenario: name, Median: Summary{PeakRSSMiB: rss}}
	}
	r := &Report{Runs: []RunResult{
		run(ScenarioScale, map[string]float64{"producer": 20, "consumer-1": 30, "consumer-2": 30, "embed-sim": 10}),
		run(ScenarioScale1M, map[string]float64{"producer": 22, "consumer-1": 33, "consumer-2": 36, "embed-sim": 40}),
	}}
	big, small, role := rssGrowth(r, ScenarioScale, ScenarioScale1M)
	if big != 36 || small != 30 || role != "consumer-2" {
		t.Errorf("rssGrowth = %v, %v, %q; want 36, 30, consumer-2", big, small, role)
	}
	if big, small, _ := rssGrowth(r, ScenarioPipeline384, ScenarioScale); big != 0 || small != 0 {
		t.Errorf("without the smaller run: rssGrowth = %v, %v; want no figures", big, small)
	}
}

// With the 1M run selected, its RSS and throughput (as measured, and with
// each run's vacuum on the clock) are compared with the scale run's;
// without it, no such ratio is reported.
func TestScale1MRatios(t *testing.T) {
	t.Parallel()
	r := &Report{Runs: []RunResult{
		{Scenario: ScenarioScale, Median: Summary{ChunksPerSec: 1000, ChunksPerSecVacuumed: 900,
			PeakRSSMiB: map[string]float64{"producer": 20, "consumer-1": 30}}},
		{Scenario: ScenarioScale1M, Median: Summary{ChunksPerSec: 950, ChunksPerSecVacuumed: 765,
			PeakRSSMiB: map[string]float64{"producer": 26, "consumer-1": 33}}},
	}}
	cfg := Config{Chunks: 10_000, ScaleChunks: 100_000, Scale1MChunks: 1_000_000, Only: []string{ScenarioScale, ScenarioScale1M}}
	got := map[string]Ratio{}
	for _, q := range ratios(r, cfg) {
		got[q.Name] = q
	}
	if q := got["RSS@1M / RSS@100k (producer)"]; q.Value != 1.3 || q.Met == nil || *q.Met {
		t.Errorf("RSS ratio %+v, want 1.3, missed", q)
	}
	if q := got["throughput 1M / 100k"]; q.Value != 0.95 || q.Met == nil || !*q.Met {
		t.Errorf("throughput ratio %+v, want 0.95, met", q)
	}
	if q := got["throughput 1M / 100k, each run's vacuum debt paid"]; q.Value != 0.85 || q.Met == nil || *q.Met {
		t.Errorf("throughput ratio with vacuum %+v, want 0.85, missed", q)
	}
	cfg.Only = []string{ScenarioScale}
	for _, q := range ratios(r, cfg) {
		if strings.Contains(q.Name, "1M") {
			t.Errorf("ratio %q without the 1M run selected", q.Name)
		}
	}
}

func TestCount(t *testing.T) {
	t.Parallel()
	for n, want := range map[int]string{1_000_000: "1M", 2_000_000: "2M", 100_000: "100k", 1_500_000: "1500k", 600: "600"} {
		if got := count(n); got != want {
			t.Errorf("count(%d) = %q, want %q", n, got, want)
		}
	}
}
