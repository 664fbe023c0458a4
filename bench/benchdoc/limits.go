package benchdoc

import (
	"fmt"
	"strings"

	"github.com/sluicehq/sluice/internal/dev/bench"
	"github.com/sluicehq/sluice/internal/ingest/pipeline"
)

// limits says, for each target r missed, what its own figures show
// limits it: one paragraph per target, in bench.TargetRatios' order, and
// nothing for a target met or not measured. Every number comes from r;
// the prose around them is the page's.
func limits(r *bench.Report) []string {
	var out []string
	for _, want := range bench.TargetRatios {
		q, ok := missed(r, want.Name)
		if !ok {
			continue
		}
		if s := limitOf(r, q); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// missed returns the ratio named name in r when it has a value and missed
// its target.
func missed(r *bench.Report, name string) (bench.Ratio, bool) {
	for _, q := range r.Ratios {
		if q.Name == name && q.Value > 0 && q.Met != nil && !*q.Met {
			return q, true
		}
	}
	return bench.Ratio{}, false
}

// limitOf is the paragraph on missed ratio q, or "" when r lacks the
// figures that explain it.
func limitOf(r *bench.Report, q bench.Ratio) string {
	if f, ok := limitWriters[q.Name]; ok {
		return f(r, q)
	}
	return ""
}

// limitWriters write the paragraph on each target that has one, by
// ratio name.
var limitWriters = map[string]func(*bench.Report, bench.Ratio) string{
	bench.RatioDocsCPU:      docsLimit,
	bench.RatioStormIdeal:   stormLimit,
	bench.RatioPoison:       poisonLimit,
	bench.RatioSearchP99:    searchLimit,
	bench.RatioReuseInputs:  reuseLimit,
	bench.RatioMigrationCPU: migrationLimit,
	bench.RatioPDFPerCore:   extractionLimit,
	bench.RatioOCRPerCore:   extractionLimit,
}

// docsLimit sets the documents' CPU against the four parts over the same
// chunks, the guarantees' bookkeeping one of them, process by process.
func docsLimit(r *bench.Report, q bench.Ratio) string {
	docs := r.Run(bench.ScenarioPipelineDocs)
	three, four := r.DocsPartsCPUPer1k, r.DocsPartsCPUPer1kWithBookkeeping
	if docs == nil || three <= 0 || four <= 0 {
		return ""
	}
	total := docs.Median.TotalCPUPer1k
	s := fmt.Sprintf("**%s: %.2f.** Over the documents' own chunks, each in its document, the three parts cost %.3f CPU s per 1,000 chunks "+
		"and the guarantees' bookkeeping alone %.3f more, so the four parts together are %.2f× the three; the run spends %.3f, %.2f× the four parts.",
		q.Name, q.Value, three, four-three, four/three, total, total/four)
	if four/three >= 2 {
		s += " The target lies below what the bookkeeping costs before the pipeline adds anything: it is met only by dropping a guarantee."
	}
	if parts := r.PartsByProcess(bench.DocsFourParts); parts != nil {
		run, alone := byKind(docs.Median.CPUPer1kByProcess), byKind(parts)
		s += fmt.Sprintf(" By process, run against parts: Sluice's own code %.3f against %.3f, embed-sim %.3f against %.3f, "+
			"PostgreSQL %.3f against %.3f, NATS %.3f against %.3f.", run.sluice, alone.sluice, run.sim, alone.sim,
			run.postgres, alone.postgres, run.nats, alone.nats)
	}
	return s
}

// kinds is CPU by kind of process: Sluice's own code (the producer and
// consumers in a run, the clients that run the same code in a ceiling),
// embed-sim, PostgreSQL and NATS.
type kinds struct{ sluice, sim, postgres, nats float64 }

// byKind sums CPU by process into kinds.
func byKind(m map[string]float64) kinds {
	var k kinds
	for role, v := range m {
		switch {
		case role == "postgres":
			k.postgres += v
		case role == "nats":
			k.nats += v
		case role == "embed-sim":
			k.sim += v
		default:
			k.sluice += v
		}
	}
	return k
}

// stormLimit compares the storm's time with its wait-bound ideal's, per
// 429 and against a clean batch's time in its loop.
func stormLimit(r *bench.Report, q bench.Ratio) string {
	s := r.StormIdeal
	if s == nil || s.Seconds <= 0 || s.CleanBatchMs <= 0 {
		return ""
	}
	return fmt.Sprintf("**%s: %.2f.** The storm took %.2f s against an ideal %.2f s: each of its %.0f waits of %.0f s held its pull loop "+
		"%.0f ms longer than the wait itself, where a clean batch takes %.0f ms in its loop. A loop that waits out a 429 holds its batch, "+
		"so the batch's own work before and after the wait adds to it; the other loops cannot take that work over.",
		q.Name, q.Value, s.Seconds, s.IdealSeconds, s.Answered429, s.RetryAfterSeconds, s.HeldPerWaitMs, s.CleanBatchMs)
}

// poisonLimit counts the requests poison costs.
func poisonLimit(r *bench.Report, q bench.Ratio) string {
	poison, clean := r.Run(bench.ScenarioPoison), r.Run(bench.ScenarioPipeline384)
	if poison == nil || clean == nil || poison.Median.EmbedRequests <= 0 || clean.Median.EmbedRequests <= 0 || poison.Median.Parked <= 0 {
		return ""
	}
	extra := float64(poison.Median.EmbedRequests - clean.Median.EmbedRequests)
	return fmt.Sprintf("**%s: %.2f.** The poison run sent %d embedding requests against the clean run's %d: %.1f more for each of its %d "+
		"bad chunks. A rejection names one input; the pipeline parks it and sends the rest again, so a batch holding several bad chunks "+
		"is rejected once for each. The figure moves between runs (repetitions of %s).",
		q.Name, q.Value, poison.Median.EmbedRequests, clean.Median.EmbedRequests, extra/float64(poison.Median.Parked), poison.Median.Parked,
		repRates(poison))
}

// searchLimit reports the best recall the 1,000,000-row sweep reached and
// its latency.
func searchLimit(r *bench.Report, q bench.Ratio) string {
	res := bench.SearchTarget(r.VectorSearch)
	if res == nil || len(res.Sweep) == 0 {
		return ""
	}
	kind := strings.TrimSuffix(res.Distribution, "s") // "topic vectors"
	best := res.Sweep[0]
	for _, e := range res.Sweep {
		if e.Recall > best.Recall {
			best = e
		}
	}
	if res.MinEfSearch == 0 {
		return fmt.Sprintf("**%s: %.2f.** Over %s %s vectors no ef_search pgvector allows reached recall@10 %.2f: the best, %.3f at "+
			"ef_search %d, took %.1f ms at p99. The graph the index builds with pgvector's defaults (m 16, ef_construction 64) is the limit.",
			q.Name, q.Value, num(float64(res.Rows)), kind, bench.SearchRecallTarget, best.Recall, best.EfSearch, best.P99Ms)
	}
	return fmt.Sprintf("**%s: %.2f.** Over %s %s vectors recall@10 reached %.2f at ef_search %d, whose searches took %.1f ms at p99: "+
		"each visits that many candidates in the graph.", q.Name, q.Value, num(float64(res.Rows)), kind,
		bench.SearchRecallTarget, res.MinEfSearch, q.Value)
}

// reuseLimit counts the repeats sent again.
func reuseLimit(r *bench.Report, q bench.Ratio) string {
	u := r.Reuse
	if u == nil || u.ProviderInputs <= 0 {
		return ""
	}
	again := u.ProviderInputs - float64(u.Corpus.DistinctChunks)
	return fmt.Sprintf("**%s: %.2f.** %.0f inputs went to the provider for %d distinct texts: %.0f of the %d repeats (%.0f%%) were sent again. "+
		"A repeat takes a stored vector, or waits for the one its own consumer process or another of the run's %d is embedding; "+
		"it is sent again only when the claim on its text expired (after %s) before that vector was stored, or was released without one.",
		q.Name, q.Value, u.ProviderInputs, u.Corpus.DistinctChunks, again, u.Corpus.RepeatedChunks,
		100*again/float64(u.Corpus.RepeatedChunks), r.Settings.Consumers, pipeline.DefaultClaimTTL)
}

// migrationLimit sets the migration's CPU by process beside the
// re-ingest's.
func migrationLimit(r *bench.Report, q bench.Ratio) string {
	mig, base := r.Run(bench.ScenarioMigration), r.Run(bench.ScenarioPipeline768)
	if mig == nil || base == nil {
		return ""
	}
	m, b := mig.Median.CPUPer1kByProcess, base.Median.CPUPer1kByProcess
	return fmt.Sprintf("**%s: %.2f.** The migration spends no producer CPU (the re-ingest's producer: %.3f CPU s per 1,000 chunks), "+
		"but PostgreSQL spends %.3f against %.3f and NATS %.3f against %.3f: each chunk is read back from PostgreSQL, queued there, "+
		"published on its generation's backfill subject and pulled again, so that the backfill goes through the live pipeline's stages, "+
		"budget and limits.", q.Name, q.Value, b["producer"], m["postgres"], b["postgres"], m["nats"], b["nats"])
}

// repRates lists a run's repetitions' chunks/s.
func repRates(run *bench.RunResult) string {
	s := ""
	for i, rep := range run.Reps {
		if i > 0 {
			s += ", "
		}
		s += num(rep.ChunksPerSec) + " chunks/s"
	}
	return s
}

// extractionLimit sets the CPU a page takes through the workers against
// the extractor alone.
func extractionLimit(r *bench.Report, q bench.Ratio) string {
	kind := map[string]string{bench.RatioPDFPerCore: "pdf", bench.RatioOCRPerCore: "ocr"}[q.Name]
	for _, e := range r.Extraction {
		m := e.Median
		if e.Kind != kind || m.AloneCPUMsPerPage <= 0 || m.WorkersCPUMsPerPage <= 0 {
			continue
		}
		s := fmt.Sprintf("**%s: %.2f.** A page took %.1f CPU ms alone (%s), %.1f with %d of those at once, and %.1f through the %d workers.",
			q.Name, q.Value, m.AloneCPUMsPerPage, e.Alone, m.ParallelCPUMsPerPage, e.Cores, m.WorkersCPUMsPerPage, e.Workers)
		if e.Kind == "ocr" {
			s += " The difference is mostly the Tesseract process started for each file, which loads its language data again: " +
				"the price of a page that can be killed and whose memory is capped."
		}
		return s
	}
	return ""
}
