package bench

import (
	"bytes"
	"math"
	"testing"
)

// The reuse corpus repeats about 30% of its chunks, both right after
// their original and far back, and its edited twin changes a few chunks
// of each document, not all of them.
func TestGenerateReuseCorpus(t *testing.T) {
	t.Parallel()
	var corpus, edited bytes.Buffer
	st, err := GenerateReuseCorpus(&corpus, &edited, 10_000, 1)
	if err != nil {
		t.Fatal(err)
	}
	if share := float64(st.RepeatedChunks) / float64(st.Chunks); math.Abs(share-reuseRepeatShare) > 0.02 {
		t.Errorf("%d of %d chunks repeated (%.3f), want about %.2f", st.RepeatedChunks, st.Chunks, share, reuseRepeatShare)
	}
	if st.DistinctChunks != st.Chunks-st.RepeatedChunks {
		t.Errorf("%d distinct chunks, want %d: the originals share no chunk and every repeat is whole", st.DistinctChunks, st.Chunks-st.RepeatedChunks)
	}
	if st.NearRepeats == 0 || st.FarRepeats == 0 {
		t.Errorf("%d near and %d far repeats, want both", st.NearRepeats, st.FarRepeats)
	}
	if st.EditedNewChunks < st.Documents-st.NearRepeats-st.FarRepeats || st.EditedNewChunks > st.EditedChunks/4 {
		t.Errorf("the edits make %d of %d chunks new in %d documents", st.EditedNewChunks, st.EditedChunks, st.Documents)
	}
	if st.ManifestRows < st.Chunks || st.ManifestRows < st.EditedChunks {
		t.Errorf("%d manifest rows for %d and %d chunks", st.ManifestRows, st.Chunks, st.EditedChunks)
	}
	var again, againEdited bytes.Buffer
	if _, err := GenerateReuseCorpus(&again, &againEdited, 10_000, 1); err != nil || !bytes.Equal(again.Bytes(), corpus.Bytes()) ||
		!bytes.Equal(againEdited.Bytes(), edited.Bytes()) {
		t.Errorf("the corpus is not deterministic (%v)", err)
	}
	t.Logf("%+v", st)
}

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
