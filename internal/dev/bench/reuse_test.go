package bench

import (
	"math"
	"testing"
)

// The reuse ratios are the medians of what embed-sim was sent over the
// corpus's chunks, each against its target; without a reuse run they
// have no value and no verdict.
func TestReuseRatios(t *testing.T) {
	t.Parallel()
	corpus := &ReuseCorpusStats{Chunks: 10_000, EditedChunks: 10_000, DistinctChunks: 7_000}
	rep := func(inputs, edits int) RepResult {
		return RepResult{Reuse: &ReuseRep{Chunks: 10_000, ProviderInputs: inputs, EditedChunks: 10_000, EditInputs: edits}}
	}
	r := &Report{Runs: []RunResult{{Scenario: ScenarioReuse, Reps: []RepResult{rep(7_100, 700), rep(7_500, 300), rep(9_000, 200)}}}}
	r.Reuse = reuseStats(r, corpus)
	got := map[string]Ratio{}
	for _, q := range ratios(r, Config{Chunks: 10_000}) {
		got[q.Name] = q
	}
	for name, want := range map[string]struct {
		value float64
		met   bool
	}{
		RatioReuseInputs: {0.75, false},
		RatioReuseEdit:   {0.03, true},
	} {
		if q := got[name]; math.Abs(q.Value-want.value) > 1e-9 || q.Met == nil || *q.Met != want.met {
			t.Errorf("%s: %+v, want %v met=%v", name, q, want.value, want.met)
		}
	}
	none := &Report{}
	none.Reuse = reuseStats(none, corpus)
	for _, q := range ratios(none, Config{Chunks: 10_000}) {
		if (q.Name == RatioReuseInputs || q.Name == RatioReuseEdit) && (q.Value != 0 || q.Met != nil) {
			t.Errorf("%s without a reuse run: %+v", q.Name, q)
		}
	}
}
