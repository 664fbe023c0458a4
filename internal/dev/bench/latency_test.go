package bench

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/ingest/consumer"
)

// The ideal is requests in flight × chunks per request / latency, with a
// batch larger than one request sent in several requests one after
// another.
func TestIdealRate(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name                                 string
		processes, workers, batchSize, maxIn int
		latency                              time.Duration
		want                                 float64
	}{
		{"defaults", 2, 3, 64, 64, 100 * time.Millisecond, 3840},
		{"workers doubled", 2, 6, 64, 64, 100 * time.Millisecond, 7680},
		{"scale-out with four processes", 4, 1, 16, 16, 100 * time.Millisecond, 640},
		{"batch of four requests", 1, 1, 64, 16, 100 * time.Millisecond, 160},
		{"batch of one short request", 1, 1, 10, 64, 50 * time.Millisecond, 200},
	} {
		if got := idealRate(c.processes, c.workers, c.batchSize, c.maxIn, c.latency); got != c.want {
			t.Errorf("%s: idealRate = %v, want %v", c.name, got, c.want)
		}
	}
}

// The latency-bound runs last at least latencyMinSeconds at their ideal,
// never shrink below --chunks, and stay small in quick mode.
func TestLatencyChunks(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name  string
		cfg   Config
		ideal float64
		want  int
	}{
		{"five seconds at the ideal", Config{Chunks: 10_000}, 3840, 19_200},
		{"never below --chunks", Config{Chunks: 50_000}, 3840, 50_000},
		{"quick mode capped", Config{Quick: true, Chunks: 200}, 7680, quickLatencyChunks},
		{"quick mode keeps a larger --chunks", Config{Quick: true, Chunks: 5_000}, 7680, 5_000},
	} {
		if got := latencyChunks(c.cfg, c.ideal); got != c.want {
			t.Errorf("%s: latencyChunks = %d, want %d", c.name, got, c.want)
		}
	}
}

// The all-defaults run keeps the consumers' own settings and is only
// reported; the latency-bound setting, at its default workers and with
// them doubled, is held to 0.8 of its ideal.
func TestLatencyRunsRatios(t *testing.T) {
	t.Parallel()
	runs := latencyRuns()
	if len(runs) != 3 || runs[0].workers != consumer.DefaultWorkers || runs[0].batch != 0 ||
		runs[1].workers != consumer.DefaultWorkers || runs[2].workers != 2*consumer.DefaultWorkers || runs[2].batch != runs[1].batch {
		t.Fatalf("latency runs %+v", runs)
	}
	if got, want := runs[1].ideal(), float64(consumer.DefaultWorkers*latencyBatch)/latencyBound.Seconds(); got != want {
		t.Errorf("latency-bound ideal %v, want %v", got, want)
	}
	report := &Report{Runs: []RunResult{
		{Scenario: runs[0].name, Median: Summary{ChunksPerSec: runs[0].ideal() / 2}},
		{Scenario: runs[1].name, Median: Summary{ChunksPerSec: runs[1].ideal() * 0.9}},
		{Scenario: runs[2].name, Median: Summary{ChunksPerSec: runs[2].ideal() * 0.7}},
	}}
	got := map[string]Ratio{}
	for _, q := range ratios(report, Config{Chunks: 10_000, ScaleChunks: 100_000}) {
		got[q.Name] = q
	}
	if q := got["latency-bound / ideal (all defaults)"]; q.Value != 0.5 || q.Target != "" || q.Met != nil {
		t.Errorf("defaults ratio %+v, want 0.5, reported only", q)
	}
	if q := got["latency-bound / ideal (latency-bound setting)"]; q.Value != 0.9 || q.Target != "≥ 0.8" || q.Met == nil || !*q.Met {
		t.Errorf("latency-bound ratio %+v, want 0.9, ≥ 0.8, met", q)
	}
	if q := got["latency-bound / ideal (latency-bound, workers doubled)"]; q.Value != 0.7 || q.Met == nil || *q.Met {
		t.Errorf("raised ratio %+v, want 0.7, ≥ 0.8, missed", q)
	}
}
