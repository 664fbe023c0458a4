package bench

import (
	"context"
	"fmt"
	"strings"
)

// ScenarioBulkReuse is the reuse scenario's corpus, 30% of whose chunks
// repeat, loaded with its source in bulk mode: what bulk mode pays the
// provider for per chunk when texts repeat, within a batch, across open
// batches and after their vectors are stored.
const ScenarioBulkReuse = "bulk-reuse"

// RatioBulkReuseInputs is the bulk load's request lines over the
// corpus's chunks: the live path's target, RatioReuseInputs's, holds for
// bulk mode too.
const RatioBulkReuseInputs = "bulk: provider request lines / chunks, 30% of chunks repeated"

// BulkReuseStats is the bulk-reuse run's corpus and the median of the
// request lines its repetitions uploaded.
type BulkReuseStats struct {
	// Chunks and DistinctChunks are the corpus's: the fewest lines
	// possible is DistinctChunks.
	Chunks         int `json:"chunks"`
	DistinctChunks int `json:"distinct_chunks"`
	// RequestLines is BulkRep's median, and InputsRatio it over Chunks.
	RequestLines float64 `json:"request_lines"`
	InputsRatio  float64 `json:"inputs_ratio"`
}

// bulkReuseScenario returns the bulk-reuse scenario over the reuse
// corpus, generating it if the reuse scenario has not.
func (r *runner) bulkReuseScenario() (scenario, error) {
	c, err := r.reuseCorpus()
	if err != nil {
		return scenario{}, err
	}
	st := c.stats
	return scenario{name: ScenarioBulkReuse, dims: 384, chunks: st.Chunks,
		description: fmt.Sprintf("the reuse corpus (%d documents, %d of %d chunks repeated) with its source in bulk mode, as bulk",
			st.Documents, st.RepeatedChunks, st.Chunks),
		run: func(ctx context.Context, _ int) (RepResult, error) { return r.bulkLoad(ctx, c.path, st.Chunks, false) }}, nil
}

// bulkReuseStats is the bulk-reuse run's BulkReuseStats in r, or nil
// without one.
func bulkReuseStats(r *Report, corpus *ReuseCorpusStats) *BulkReuseStats {
	run := r.measured(ScenarioBulkReuse)
	if run == nil || corpus == nil {
		return nil
	}
	var lines []float64
	for _, rep := range run.Reps {
		if rep.Bulk != nil {
			lines = append(lines, float64(rep.Bulk.RequestLines))
		}
	}
	s := &BulkReuseStats{Chunks: corpus.Chunks, DistinctChunks: corpus.DistinctChunks, RequestLines: median(lines)}
	if s.Chunks > 0 {
		s.InputsRatio = s.RequestLines / float64(s.Chunks)
	}
	return s
}

// bulkReuseRatio is the bulk-reuse run's inputs ratio, 0 without it.
func bulkReuseRatio(s *BulkReuseStats) float64 {
	if s == nil {
		return 0
	}
	return s.InputsRatio
}

// writeBulkReuse prints what the bulk-reuse run paid for, beside the
// fewest lines its corpus allows.
func writeBulkReuse(b *strings.Builder, r *Report) {
	s := r.BulkReuse
	if s == nil {
		return
	}
	fmt.Fprintf(b, "\nbulk-reuse: %d chunks, %d distinct texts; %.0f request lines uploaded (fewest possible %d): %.2f of the chunks\n",
		s.Chunks, s.DistinctChunks, s.RequestLines, s.DistinctChunks, s.InputsRatio)
}
