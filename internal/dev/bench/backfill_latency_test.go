package bench

import (
	"math"
	"strings"
	"testing"
)

// The fresh documents' p99 with a backfill running is set against their
// p99 without, medians of the repetitions, and held to 1.5; over it, the
// report says whether the CPU was the limit.
func TestBackfillLatencyRatio(t *testing.T) {
	t.Parallel()
	rep := func(without, with, busy float64) RepResult {
		return RepResult{BackfillLatency: &BackfillLatencyRep{StoredChunks: 100_000, FreshChunks: 2_400,
			WithoutP50Ms: without / 2, WithoutP99Ms: without, WithoutSeconds: 5, WithoutCPUBusy: 0.4,
			WithP50Ms: with / 2, WithP99Ms: with, WithSeconds: 8, WithCPUBusy: busy, Backfilled: 800}}
	}
	for _, c := range []struct {
		name  string
		reps  []RepResult
		ratio float64
		met   bool
		limit string
	}{
		{"met", []RepResult{rep(1000, 1200, 0.95), rep(1100, 1300, 0.5), rep(900, 5000, 0.5)}, 1300.0 / 1000, true, ""},
		{"missed on a busy machine", []RepResult{rep(1000, 2000, 0.95)}, 2, false, "the CPU: the machine was 95% busy"},
		{"missed with cores to spare", []RepResult{rep(1000, 1600, 0.6)}, 1.6, false, "not the CPU (60% busy, 40% without)"},
	} {
		r := &Report{Runs: []RunResult{{Scenario: ScenarioBackfillLatency, Reps: c.reps}}}
		r.BackfillLatency = backfillLatencyStats(r)
		var q Ratio
		for _, x := range ratios(r, Config{Chunks: 10_000}) {
			if x.Name == RatioBackfillLatencyP99 {
				q = x
			}
		}
		if math.Abs(q.Value-c.ratio) > 1e-9 || q.Met == nil || *q.Met != c.met || q.Target != "≤ 1.5" {
			t.Errorf("%s: ratio %+v, want %v met=%v", c.name, q, c.ratio, c.met)
		}
		if s := r.BackfillLatency; !strings.HasPrefix(s.Limit, c.limit) || (c.limit == "") != (s.Limit == "") {
			t.Errorf("%s: limit %q, want it to start with %q", c.name, s.Limit, c.limit)
		}
		var b strings.Builder
		writeBackfillLatency(&b, r)
		if over := strings.Contains(b.String(), "over the target, limited by "+c.limit); over == c.met {
			t.Errorf("%s: report line %q", c.name, b.String())
		}
	}
	if s := backfillLatencyStats(&Report{}); s != nil || backfillLatencyRatio(s) != 0 {
		t.Errorf("without a backfill-latency run: %+v", s)
	}
}
