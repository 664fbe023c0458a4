package bench

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/sluicehq/sluice/internal/dev/embedsim"
	"github.com/sluicehq/sluice/internal/dev/localenv"
	"github.com/sluicehq/sluice/internal/ops/reconcile"
)

// ScenarioReuse is the 384-dimension pipeline over long documents, a
// share of whose chunks repeat, then the same documents again with one
// paragraph of each edited: what the pipeline sends to the embedder
// when it can reuse stored vectors, and what an edit costs.
const ScenarioReuse = "reuse"

// Names of the reuse scenario's ratios; both have targets.
const (
	// RatioReuseInputs is the embedder's inputs over the chunks of a
	// corpus where reuseRepeatShare of the chunks repeat.
	RatioReuseInputs = "provider inputs / chunks, 30% of chunks repeated"
	// RatioReuseEdit is the embedder's inputs when every document of
	// that corpus comes back with one paragraph edited, over its chunks.
	RatioReuseEdit = "chunks re-embedded / chunks, one paragraph of every document edited"
)

// ReuseRep is what one repetition of the reuse scenario counted beyond
// its first run's figures, which are the RepResult's.
type ReuseRep struct {
	// Chunks are the corpus's chunks and ProviderInputs the inputs
	// embed-sim received while the pipeline stored them.
	Chunks         int `json:"chunks"`
	ProviderInputs int `json:"provider_inputs"`
	// EditedChunks are the chunks of the documents as edited and
	// EditInputs the inputs embed-sim received while the pipeline
	// stored them over the first run's vectors.
	EditedChunks int `json:"edited_chunks"`
	EditInputs   int `json:"edit_inputs"`
}

// ReuseStats is the reuse scenario's corpus and the medians of what its
// repetitions sent to the embedder.
type ReuseStats struct {
	Corpus ReuseCorpusStats `json:"corpus"`
	// ProviderInputs and EditInputs are ReuseRep's medians.
	ProviderInputs float64 `json:"provider_inputs"`
	EditInputs     float64 `json:"edit_inputs"`
	// InputsRatio is ProviderInputs over the corpus's chunks, and
	// EditRatio EditInputs over the edited corpus's.
	InputsRatio float64 `json:"inputs_ratio"`
	EditRatio   float64 `json:"edit_ratio"`
}

// reuseStats is the reuse run's ReuseStats in r, or nil without one.
func reuseStats(r *Report, corpus *ReuseCorpusStats) *ReuseStats {
	run := r.measured(ScenarioReuse)
	if run == nil || corpus == nil {
		return nil
	}
	var inputs, edits []float64
	for _, rep := range run.Reps {
		if rep.Reuse != nil {
			inputs = append(inputs, float64(rep.Reuse.ProviderInputs))
			edits = append(edits, float64(rep.Reuse.EditInputs))
		}
	}
	s := &ReuseStats{Corpus: *corpus, ProviderInputs: median(inputs), EditInputs: median(edits)}
	if corpus.Chunks > 0 && corpus.EditedChunks > 0 {
		s.InputsRatio = s.ProviderInputs / float64(corpus.Chunks)
		s.EditRatio = s.EditInputs / float64(corpus.EditedChunks)
	}
	return s
}

// reuseRatios are the reuse scenario's two ratios, 0 without its run.
func reuseRatios(s *ReuseStats) (inputs, edit float64) {
	if s == nil {
		return 0, 0
	}
	return s.InputsRatio, s.EditRatio
}

// runReuse runs one repetition of the reuse scenario: the corpus
// through the pipeline, measured as any pipeline run, then the edited
// corpus through a second producer run and fresh consumers and
// embed-sim, against the vectors the first run stored. Each run must end
// with nothing leaked or duplicated by reconcile's count.
func (r *runner) runReuse(ctx context.Context, c *reuseCorpus) (RepResult, error) {
	defer r.killAll()
	const dims = 384
	db, broker, err := r.in.fresh(ctx, dims, false)
	if err != nil {
		return RepResult{}, err
	}
	defer db.drop()
	spec := pipelineSpec{dims: dims, chunks: c.stats.Chunks}
	first, err := r.reuseRun(ctx, spec, db, broker, c.path, c.stats.Chunks)
	if err != nil {
		return RepResult{}, err
	}
	if err := checkReconciled(ctx, db, broker, "first run"); err != nil {
		return RepResult{}, err
	}
	res, err := measure(ctx, db, first.start, c.stats.Chunks)
	if err != nil {
		return res, err
	}
	res.EmbedRequests, res.Processes = first.requests, first.processes
	res.PostgresCPUSeconds, res.NATSCPUSeconds = first.pgCPU, first.natsCPU
	cpuPer1k(&res, c.stats.Chunks, "embed-sim")
	edit, err := r.reuseRun(ctx, spec, db, broker, c.editedPath, c.stats.ManifestRows)
	if err != nil {
		return res, fmt.Errorf("edit run: %w", err)
	}
	if err := checkReconciled(ctx, db, broker, "edit run"); err != nil {
		return res, err
	}
	res.Reuse = &ReuseRep{Chunks: c.stats.Chunks, ProviderInputs: first.inputs,
		EditedChunks: c.stats.EditedChunks, EditInputs: edit.inputs}
	return res, nil
}

// reuseRunResult is what one producer run of the reuse scenario used.
type reuseRunResult struct {
	start            time.Time
	requests, inputs int
	processes        []ProcUsage
	pgCPU, natsCPU   float64
}

// reuseRun runs the producer over corpus against consumers and an
// embed-sim of its own, until the manifest's rows number rows and none
// is pending, and stops them.
func (r *runner) reuseRun(ctx context.Context, spec pipelineSpec, db *database, broker *localenv.NATS, corpus string, rows int) (reuseRunResult, error) {
	var out reuseRunResult
	sim, simURL, err := startSim(r.start, r.bins, r.work, spec.dims, r.cfg.Seed, simFaults{})
	if err != nil {
		return out, err
	}
	prodSpec, consSpecs := r.processes(spec, serviceEnv(db, broker.URL, simURL, spec.dims), corpus)
	cons, err := r.startAll(consSpecs)
	if err != nil {
		return out, err
	}
	pg0, nats0 := infraCPU("postgres"), infraCPU("nats-server")
	out.start = time.Now()
	prod, err := r.start(prodSpec)
	if err != nil {
		return out, err
	}
	if err := waitSettled(ctx, db, rows, settleTimeout(rows), prod, append([]*proc{sim}, cons...)); err != nil {
		return out, err
	}
	counts, err := embedsim.FetchCounts(ctx, simURL)
	if err != nil {
		return out, err
	}
	out.requests, out.inputs = counts.Requests, counts.Inputs
	if err := stopAll(cons, sim); err != nil {
		return out, err
	}
	for _, p := range append(append([]*proc{prod}, cons...), sim) {
		out.processes = append(out.processes, p.usage())
	}
	out.pgCPU = (infraCPU("postgres") - pg0).Seconds()
	out.natsCPU = (infraCPU("nats-server") - nats0).Seconds()
	return out, nil
}

// checkReconciled fails unless reconcile finds nothing leaked or
// duplicated, and no other problem, in the run's database and streams.
func checkReconciled(ctx context.Context, db *database, broker *localenv.NATS, what string) error {
	nc, js, err := connect(broker)
	if err != nil {
		return err
	}
	defer nc.Close()
	rep, err := reconcile.Run(ctx, db.pool, js, reconcile.Config{})
	if err != nil {
		return fmt.Errorf("%s: reconcile: %w", what, err)
	}
	if rep.Leaked.Total() != 0 || rep.Duplicated != 0 || rep.Problems() != 0 {
		return fmt.Errorf("%s: reconcile found %v", what, rep.Named())
	}
	return nil
}

// reuseScenario generates the reuse corpus and returns its scenario.
func (r *runner) reuseScenario() (scenario, error) {
	c, err := r.reuseCorpus()
	if err != nil {
		return scenario{}, err
	}
	st := c.stats
	return scenario{name: ScenarioReuse, dims: 384, chunks: st.Chunks,
		description: fmt.Sprintf("384 dims, %d documents of about %d chunks, %d of %d chunks repeated; then one paragraph of each edited",
			st.Documents, reuseDocChunks, st.RepeatedChunks, st.Chunks),
		run: func(ctx context.Context, _ int) (RepResult, error) { return r.runReuse(ctx, c) }}, nil
}

// writeReuse prints what the reuse run sent to the embedder, beside the
// fewest inputs its corpus allows.
func writeReuse(b *strings.Builder, r *Report) {
	s := r.Reuse
	if s == nil {
		return
	}
	c := s.Corpus
	fmt.Fprintf(b, "\nreuse: %d documents, %d chunks of which %d repeat (%d documents repeating the one before, %d one far back); "+
		"provider inputs %.0f (fewest possible %d): %.2f of the chunks. One paragraph of every document edited: %d chunks, "+
		"%.0f re-embedded (fewest possible %d): %.3f\n", c.Documents, c.Chunks, c.RepeatedChunks, c.NearRepeats, c.FarRepeats,
		s.ProviderInputs, c.DistinctChunks, s.InputsRatio, c.EditedChunks, s.EditInputs, c.EditedNewChunks, s.EditRatio)
}
