package bench

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/sluicehq/sluice/internal/ingest/producer"
)

// Names of the ratios whose targets the benchmark page lists whether or
// not a report measured them.
const (
	// RatioSingleChunkCPU is the one-chunk-a-document pipeline's CPU per
	// chunk over the four parts' alone (the three and bookkeeping).
	RatioSingleChunkCPU = "single-chunk pipeline CPU / four parts' CPU (384 dims)"
	// RatioDocsCPU is the pipeline-docs run's CPU per chunk over the
	// three parts' alone.
	RatioDocsCPU = "realistic documents' CPU / Σ three parts' CPU (384 dims)"
	// RatioDocsCPUSameChunks is the pipeline-docs run's CPU per chunk
	// over the three parts' measured over its own chunks, which hold
	// more text than the single-chunk corpus's the parts otherwise move.
	RatioDocsCPUSameChunks = "realistic documents' CPU / Σ three parts' CPU over the same chunks (384 dims)"
	// RatioDocsCPUFourPartsSameChunks is the pipeline-docs run's CPU per
	// chunk over the four parts' measured over its own chunks, each in
	// its document.
	RatioDocsCPUFourPartsSameChunks = "realistic documents' CPU / four parts' CPU over the same chunks (384 dims)"
	// RatioDocsGuarantees is what the guarantees' bookkeeping adds to
	// the three parts over the pipeline-docs run's chunks: the four
	// parts' CPU over the three's. Above 2, RatioDocsCPU's target is
	// below what the guarantees alone cost.
	RatioDocsGuarantees = "four parts' CPU / three parts' CPU over the realistic documents' chunks (384 dims)"
	// RatioStormIdeal is the 429 storm run's throughput over its
	// wait-bound ideal (see StormIdeal).
	RatioStormIdeal = "429 storm / wait-bound ideal"
	// RatioPoison is the poison run's throughput over the clean run's.
	RatioPoison = "poison / clean"
	// RatioSearchP99 is the search p99, in milliseconds, over 1,000,000
	// topic vectors at the smallest ef_search whose recall@10 is at
	// least SearchRecallTarget.
	RatioSearchP99 = "search p99 ms at 1,000,000 topic vectors, smallest ef_search with recall@10 ≥ 0.95"
)

// TargetRatios are the ratios with targets the benchmark page lists, in
// its order, each with its target and no value.
var TargetRatios = []Ratio{
	{Name: RatioSingleChunkCPU, Target: "≤ 1.25"},
	{Name: RatioDocsCPU, Target: "≤ 2"},
	{Name: RatioStormIdeal, Target: "≥ 0.85"},
	{Name: RatioPoison, Target: "≥ 0.9"},
	{Name: RatioSearchP99, Target: fmt.Sprintf("≤ %d ms", searchP99TargetMs)},
	{Name: RatioReuseInputs, Target: "≤ 0.72"},
	{Name: RatioReuseEdit, Target: "≤ 0.06"},
	{Name: RatioBulkReuseInputs, Target: "≤ 0.72"},
	{Name: RatioMigrationCPU, Target: "≤ 1"},
	{Name: RatioPDFPerCore, Target: "≥ " + strconv.FormatFloat(pdfPerCoreTarget, 'f', -1, 64)},
	{Name: RatioOCRPerCore, Target: "≥ " + strconv.FormatFloat(ocrPerCoreTarget, 'f', -1, 64)},
	{Name: RatioBackfillLatencyP99, Target: "≤ " + strconv.FormatFloat(backfillLatencyTarget, 'f', -1, 64)},
}

// targetOf is the target of the named ratio of TargetRatios.
func targetOf(name string) string {
	for _, q := range TargetRatios {
		if q.Name == name {
			return q.Target
		}
	}
	panic("bench: no target ratio " + name)
}

// ratios compares the runs of one invocation with each other. A ratio
// whose runs are missing is reported with value 0 and no verdict.
func ratios(r *Report, cfg Config) []Ratio {
	summary := func(name string) Summary {
		for _, run := range r.Runs {
			if run.Scenario == name {
				return run.Median
			}
		}
		return Summary{}
	}
	rate := func(name string) float64 { return summary(name).ChunksPerSec }
	clean := rate(ScenarioPipeline384)
	var out []Ratio
	add := func(name string, num, den float64, target string, met func(float64) bool) {
		ratio := Ratio{Name: name, Target: target}
		if num > 0 && den > 0 {
			ratio.Value = num / den
			if met != nil {
				ok := met(ratio.Value)
				ratio.Met = &ok
			}
		}
		out = append(out, ratio)
	}
	atLeast := func(x float64) func(float64) bool { return func(v float64) bool { return v >= x } }
	add("pipeline / combined ceiling", clean, r.CombinedCeiling, "", nil)
	add("pipeline / combined ceiling incl. bookkeeping", clean, r.CombinedCeilingWithBookkeeping, "≥ 0.7", atLeast(0.7))
	atMost := func(x float64) func(float64) bool { return func(v float64) bool { return v <= x } }
	cleanCPU, docsCPU := summary(ScenarioPipeline384).TotalCPUPer1k, summary(ScenarioPipelineDocs).TotalCPUPer1k
	add("pipeline CPU / Σ three parts' CPU (384 dims)", cleanCPU, r.PartsCPUPer1k, "", nil)
	add(RatioSingleChunkCPU, cleanCPU, r.PartsCPUPer1kWithBookkeeping, targetOf(RatioSingleChunkCPU), atMost(1.25))
	add(RatioDocsCPU, docsCPU, r.PartsCPUPer1k, targetOf(RatioDocsCPU), atMost(2))
	add(RatioDocsCPUSameChunks, docsCPU, r.DocsPartsCPUPer1k, "", nil)
	add(RatioDocsCPUFourPartsSameChunks, docsCPU, r.DocsPartsCPUPer1kWithBookkeeping, "", nil)
	add(RatioDocsGuarantees, r.DocsPartsCPUPer1kWithBookkeeping, r.DocsPartsCPUPer1k, "", nil)
	add("realistic documents' CPU / four parts' CPU (384 dims)", docsCPU, r.PartsCPUPer1kWithBookkeeping, "", nil)
	add("realistic documents / single-chunk pipeline (chunks/s)", rate(ScenarioPipelineDocs), clean, "", nil)
	add("pipeline / naive", clean, rate(ScenarioNaive), "≥ 3", atLeast(3))
	add("pipeline / River", clean, rate(ScenarioRiver), "> 1 (ahead)", func(v float64) bool { return v > 1 })
	add(RatioPoison, rate(ScenarioPoison), clean, targetOf(RatioPoison), atLeast(0.9))
	ideal := 0.0
	if r.StormIdeal != nil {
		ideal = r.StormIdeal.ChunksPerSec
	}
	add(RatioStormIdeal, rate(ScenarioStorm429), ideal, targetOf(RatioStormIdeal), atLeast(0.85))
	add("429 storm / clean", rate(ScenarioStorm429), clean, "", nil)
	add("sync_interval always / default", rate(ScenarioSyncAlways), clean, "", nil)
	add("768 dims / 384 dims", rate(ScenarioPipeline768), clean, "", nil)
	add("4 / 1 consumer processes (100 ms embedder)", rate(scaleOutName(4)), rate(scaleOutName(1)), "≥ 3", atLeast(3))
	for _, l := range latencyRuns() {
		target, met := l.verdict()
		add(l.ratioName(), rate(l.name), l.ideal(), target, met)
	}
	rss := func(smallRun, bigRun string, smallN, bigN int) {
		big, small, role := rssGrowth(r, smallRun, bigRun)
		add(fmt.Sprintf("RSS@%s / RSS@%s (%s)", count(bigN), count(smallN), role), big, small, "≤ 1.2",
			func(v float64) bool { return v <= 1.2 })
	}
	rss(ScenarioPipeline384, ScenarioScale, cfg.Chunks, cfg.ScaleChunks)
	out = append(out, quotaRatios(r)...)
	inputs, edit := reuseRatios(r.Reuse)
	add(RatioReuseInputs, inputs, 1, targetOf(RatioReuseInputs), atMost(0.72))
	add(RatioReuseEdit, edit, 1, targetOf(RatioReuseEdit), atMost(0.06))
	cpu, wall, vectors, vectorsCPU := migrationRatios(r.Migration)
	add(RatioMigrationCPU, cpu, 1, targetOf(RatioMigrationCPU), atMost(1))
	add(RatioMigrationVectorsCPU, vectorsCPU, 1, "", nil)
	add(RatioMigrationWall, wall, 1, "", nil)
	add(RatioMigrationVectors, vectors, 1, "", nil)
	add(RatioBackfillLatencyP99, backfillLatencyRatio(r.BackfillLatency), 1, targetOf(RatioBackfillLatencyP99), atMost(backfillLatencyTarget))
	add(RatioBulkRequests, bulkRatio(r.Bulk), 1, "", nil)
	add(RatioBulkReuseInputs, bulkReuseRatio(r.BulkReuse), 1, targetOf(RatioBulkReuseInputs), atMost(0.72))
	out = append(out, extractionRatios(r.Extraction)...)
	if slices.Contains(cfg.searchSizes(), 1_000_000) {
		out = append(out, searchRatio(r.VectorSearch))
	}
	if cfg.selected(ScenarioScale1M) {
		rss(ScenarioScale, ScenarioScale1M, cfg.ScaleChunks, cfg.Scale1MChunks)
		add(fmt.Sprintf("throughput %s / %s", count(cfg.Scale1MChunks), count(cfg.ScaleChunks)),
			rate(ScenarioScale1M), rate(ScenarioScale), "≥ 0.9", atLeast(0.9))
		vacuumed := func(name string) float64 { return summary(name).ChunksPerSecVacuumed }
		add(fmt.Sprintf("throughput %s / %s, each run's vacuum debt paid", count(cfg.Scale1MChunks), count(cfg.ScaleChunks)),
			vacuumed(ScenarioScale1M), vacuumed(ScenarioScale), "≥ 0.9", atLeast(0.9))
	}
	return out
}

// rssGrowth finds the service process whose peak RSS grew most from the
// run named smallRun to the run named bigRun, and returns its two medians.
func rssGrowth(r *Report, smallRun, bigRun string) (big, small float64, role string) {
	var base, scale *RunResult
	for i := range r.Runs {
		switch r.Runs[i].Scenario {
		case smallRun:
			base = &r.Runs[i]
		case bigRun:
			scale = &r.Runs[i]
		}
	}
	role = "no " + bigRun + " run"
	if base == nil || scale == nil {
		return 0, 0, role
	}
	worst := 0.0
	for name, b := range base.Median.PeakRSSMiB {
		s := scale.Median.PeakRSSMiB[name]
		if name == "embed-sim" || b <= 0 || s <= 0 {
			continue
		}
		if g := s / b; g > worst {
			worst, big, small, role = g, s, b, name
		}
	}
	return big, small, role
}

// count renders a run's size the way its name does: 1M, 100k.
func count(n int) string {
	if n%1_000_000 == 0 {
		return fmt.Sprintf("%dM", n/1_000_000)
	}
	if n%1000 == 0 {
		return fmt.Sprintf("%dk", n/1000)
	}
	return fmt.Sprint(n)
}

// writeMarkdown prints the report as markdown: ceilings, runs, CPU by
// process, ratios and errors.
func writeMarkdown(w io.Writer, r *Report) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# sluice-bench %s\n\n", r.Date)
	fmt.Fprintf(&b, "%s %s/%s, %d CPUs, kernel %s; %d chunks per run, median of %d rep(s)\n\n",
		r.Host.GoVersion, r.Host.OS, r.Host.Arch, r.Host.CPUs, r.Host.Kernel, r.Settings.Chunks, r.Settings.Reps)
	writeCeilings(&b, r)
	writeRuns(&b, r)
	writeStorm(&b, r)
	writeReuse(&b, r)
	writeMigration(&b, r)
	writeBackfillLatency(&b, r)
	writeBulk(&b, r)
	writeBulkReuse(&b, r)
	writeCPU(&b, r)
	writeRatios(&b, r)
	writeStorage(&b, r)
	writeVectorSearch(&b, r)
	writeExtraction(&b, r)
	if len(r.Errors) > 0 {
		b.WriteString("\n## Errors\n\n")
		for _, e := range r.Errors {
			fmt.Fprintf(&b, "- %s\n", strings.ReplaceAll(e, "\n", " ⏎ "))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeCeilings prints the ceilings and what they add up to.
func writeCeilings(b *strings.Builder, r *Report) {
	fmt.Fprintf(b, "## Ceilings (each part alone, %d dims, batch %d, %d in flight)\n\n", ceilingDims, batchSize, concurrency)
	b.WriteString("| part | median /s | unit | CPU s / 1k (client + server) |\n| --- | ---: | --- | ---: |\n")
	for _, c := range r.Ceilings {
		fmt.Fprintf(b, "| %s | %s | %s | %.3f |\n", c.Name, num(c.Median), c.Unit, c.CPUPer1k)
	}
	parts := strings.Join(ceilingParts, ", ")
	fmt.Fprintf(b, "| combined 1/Σ(1/x), Σ CPU (%s) | %s | chunks | %.3f |\n", parts, num(r.CombinedCeiling), r.PartsCPUPer1k)
	fmt.Fprintf(b, "| combined 1/Σ(1/x), Σ CPU (%s, %s) | %s | chunks | %.3f |\n\n",
		parts, ceilingBookkeeping, num(r.CombinedCeilingWithBookkeeping), r.PartsCPUPer1kWithBookkeeping)
	fmt.Fprintf(b, "- %s: the producer's manifest writes (%d documents a transaction), "+
		"then the consumer's pipeline with an embedder that answers at once and no vector write, "+
		"then the producer's publish confirmations, held past the store as the producer holds them\n\n", ceilingBookkeeping, producer.DefaultBatchDocs)
}

// writeRuns prints a row per run and the runs' descriptions.
func writeRuns(b *strings.Builder, r *Report) {
	b.WriteString("## Runs\n\n")
	b.WriteString("| run | chunks | chunks/s (median) | p50 ms | p99 ms | peak RSS MiB | CPU s / 1k chunks (services · all) | stored / parked |\n")
	b.WriteString("| --- | ---: | ---: | ---: | ---: | --- | ---: | ---: |\n")
	for _, run := range r.Runs {
		m := run.Median
		if len(run.Reps) == 0 {
			fmt.Fprintf(b, "| %s | %d | failed | | | | | |\n", run.Scenario, run.Chunks)
			continue
		}
		fmt.Fprintf(b, "| %s | %d | %s | %.0f | %.0f | %s | %.3f · %.3f | %d / %d |\n",
			run.Scenario, run.Chunks, num(m.ChunksPerSec), m.P50Ms, m.P99Ms, rssList(m.PeakRSSMiB),
			m.ServiceCPUPer1k, m.TotalCPUPer1k, m.Stored, m.Parked)
	}
	b.WriteString("\n")
	for _, run := range r.Runs {
		fmt.Fprintf(b, "- %s: %s\n", run.Scenario, run.Description)
		if m := run.Median; m.ChunksPerSecVacuumed > 0 {
			fmt.Fprintf(b, "  - with its vacuum debt paid on the clock (VACUUM (ANALYZE), median %.1f s): %s chunks/s\n",
				m.VacuumSeconds, num(m.ChunksPerSecVacuumed))
		}
	}
}

// writeStorm prints the 429 storm's wait-bound ideal and what it was
// computed from.
func writeStorm(b *strings.Builder, r *Report) {
	s := r.StormIdeal
	if s == nil {
		return
	}
	fmt.Fprintf(b, "\n429 storm: %.0f of %.0f requests answered 429 (%.1f%%), Retry-After %.0f s, %d pull loops, clean %s chunks/s: "+
		"wait-bound ideal %s chunks/s\n", s.Answered429, s.Requests, 100*s.Observed429Rate, s.RetryAfterSeconds, s.PullLoops,
		num(s.CleanChunksPerSec), num(s.ChunksPerSec))
}

// writeCPU prints each run's CPU per 1,000 chunks by kind of process,
// next to what its parts cost alone.
func writeCPU(b *strings.Builder, r *Report) {
	b.WriteString("\n## CPU by process (s per 1k chunks)\n\n")
	fmt.Fprintf(b, "Σ parts alone (%s): %.3f; with %s: %.3f. all / Σ parts is the CPU a run spends beyond "+
		"the three parts' (runs at %d dims only).\n\n", strings.Join(ceilingParts, " + "), r.PartsCPUPer1k,
		ceilingBookkeeping, r.PartsCPUPer1kWithBookkeeping, ceilingDims)
	if r.DocsPartsCPUPer1k > 0 {
		fmt.Fprintf(b, "Σ parts alone over %s's chunks (%s): %.3f; with %s: %.3f.\n\n", ScenarioPipelineDocs, strings.Join(ceilingDocsParts, " + "),
			r.DocsPartsCPUPer1k, ceilingBookkeepingDocs, r.DocsPartsCPUPer1kWithBookkeeping)
	}
	b.WriteString("| run | producer | consumers | embed-sim | PostgreSQL | NATS | all | all / Σ parts |\n")
	b.WriteString("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	for _, run := range r.Runs {
		if len(run.Reps) == 0 {
			continue
		}
		k := cpuByKind(run.Median.CPUPer1kByProcess)
		over := "—"
		if run.CPUOverParts > 0 {
			over = fmt.Sprintf("%.2f", run.CPUOverParts)
		}
		fmt.Fprintf(b, "| %s | %.3f | %.3f | %.3f | %.3f | %.3f | %.3f | %s |\n", run.Scenario,
			k.producer, k.consumers, k.sim, k.postgres, k.nats, run.Median.TotalCPUPer1k, over)
	}
	writeCPUBeyondParts(b, r)
}

// writeCPUBeyondParts sets each run at the ceilings' dimensions beside
// the four parts alone, process by process, so that what a run spends
// beyond its parts shows where it is spent. The parts' clients run the
// code the producer and consumers run, so they face those two together.
func writeCPUBeyondParts(b *strings.Builder, r *Report) {
	parts := r.PartsCPUPer1kByProcess
	if len(parts) == 0 || r.PartsCPUPer1k <= 0 {
		return
	}
	fmt.Fprintf(b, "\nThe four parts alone (the three and %s) cost %.2f× the three. By process, against each run "+
		"at %d dims:\n\n",
		ceilingBookkeeping, r.PartsCPUPer1kWithBookkeeping/r.PartsCPUPer1k, ceilingDims)
	b.WriteString("| | Sluice code (producer + consumers; the parts' clients) | embed-sim | PostgreSQL | NATS | all |\n")
	b.WriteString("| --- | ---: | ---: | ---: | ---: | ---: |\n")
	fmt.Fprintf(b, "| four parts alone | %.3f | %.3f | %.3f | %.3f | %.3f |\n", parts[cpuClients], parts[cpuSim],
		parts[cpuPostgres], parts[cpuNATS], r.PartsCPUPer1kWithBookkeeping)
	for _, run := range r.Runs {
		if run.CPUOverParts <= 0 {
			continue
		}
		k := cpuByKind(run.Median.CPUPer1kByProcess)
		fmt.Fprintf(b, "| %s | %.3f | %.3f | %.3f | %.3f | %.3f |\n", run.Scenario,
			k.producer+k.consumers, k.sim, k.postgres, k.nats, run.Median.TotalCPUPer1k)
	}
}

// processKinds are CPU figures summed by kind of process.
type processKinds struct{ producer, consumers, sim, postgres, nats float64 }

// cpuByKind sums CPU figures by process role into kinds: producers,
// consumers (the River peer and the outbox-relay among them), PostgreSQL, NATS, and the rest,
// which is embed-sim.
func cpuByKind(byRole map[string]float64) processKinds {
	var k processKinds
	for role, v := range byRole {
		switch {
		case role == cpuPostgres:
			k.postgres += v
		case role == cpuNATS:
			k.nats += v
		case rank(role) == rankProducer:
			k.producer += v
		case rank(role) == rankConsumer:
			k.consumers += v
		default:
			k.sim += v
		}
	}
	return k
}

// writeRatios prints the ratios next to their targets.
func writeRatios(b *strings.Builder, r *Report) {
	b.WriteString("\n## Ratios (reported, never asserted)\n\n")
	b.WriteString("| ratio | value | target | status |\n| --- | ---: | --- | --- |\n")
	for _, q := range r.Ratios {
		status := "reported"
		switch {
		case q.Value == 0:
			status = "n/a (run missing)"
		case q.Met != nil && *q.Met:
			status = "met"
		case q.Met != nil:
			status = "missed"
		}
		target := q.Target
		if target == "" {
			target = "—"
		}
		fmt.Fprintf(b, "| %s | %.2f | %s | %s |\n", q.Name, q.Value, target, status)
	}
}

// rssList renders per-process peak RSS in a fixed order: producer first,
// then consumers, then the rest.
func rssList(m map[string]float64) string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	slices.SortFunc(names, func(a, b string) int {
		if d := rank(a) - rank(b); d != 0 {
			return d
		}
		return strings.Compare(a, b)
	})
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = fmt.Sprintf("%s %.0f", n, m[n])
	}
	return strings.Join(parts, " · ")
}

// Process ranks: producers first, then consumers, then the rest.
const (
	rankProducer = iota
	rankConsumer
	rankOther
)

// rank orders a process role.
func rank(role string) int {
	switch {
	case strings.Contains(role, "producer"):
		return rankProducer
	case strings.Contains(role, "consumer"), role == "river-peer", role == binRelay:
		return rankConsumer
	}
	return rankOther
}

// num renders a rate with thousands separators and no decimals.
func num(v float64) string {
	s := fmt.Sprintf("%.0f", v)
	var out []byte
	for i, c := range []byte(s) {
		if i > 0 && (len(s)-i)%3 == 0 && s[i-1] != '-' {
			out = append(out, ',')
		}
		out = append(out, c)
	}
	return string(out)
}
