package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// Main is the sluice-bench command: it parses args, runs the benchmark,
// prints the markdown report on stdout and writes the JSON results.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, err := ParseFlags(args, stderr)
	if err != nil {
		return err
	}
	_, err = Run(ctx, cfg, stdout, stderr)
	return err
}

// scenario is one end-to-end run, repeated Config.Reps times.
type scenario struct {
	name, description string
	dims, chunks      int
	run               func(ctx context.Context, rep int) (RepResult, error)
}

// Run runs the selected scenarios, interleaving their repetitions, then
// writes the report: markdown on stdout, JSON to cfg.Out. A failed run is
// recorded in the report and makes Run return an error once everything
// else has run.
func Run(ctx context.Context, cfg Config, stdout, stderr io.Writer) (*Report, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.applyDefaults()
	report := &Report{Date: time.Now().UTC().Format(time.RFC3339), Host: host(), Settings: Settings{
		Quick: cfg.Quick, Reps: cfg.Reps, Chunks: cfg.Chunks, ScaleChunks: cfg.ScaleChunks, Seed: cfg.Seed,
		Scenarios: cfg.Only, Consumers: consumers, RiverWorkers: cfg.RiverWorkers,
		RiverFetchCooldown: cfg.RiverFetchCooldown.String(), Profiled: cfg.ProfileDir != ""}}
	if cfg.selected(ScenarioScale1M) {
		report.Settings.Scale1MChunks = cfg.Scale1MChunks
	}
	report.Settings.SearchSizes = cfg.searchSizes()
	r, cleanup, err := setup(ctx, cfg, stderr)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	scenarios, errs := r.plan(ctx)
	results, ceilingReps, runErrs := r.repeat(ctx, scenarios)
	errs = append(errs, runErrs...)
	report.VectorSearch, runErrs = r.vectorSearch(ctx)
	errs = append(errs, runErrs...)
	report.Extraction, runErrs = r.extraction(ctx)
	errs = append(errs, runErrs...)
	report.setCeilings(ceilingReps, cfg.Chunks)
	for i, s := range scenarios {
		results[i].Scenario, results[i].Description, results[i].Dims, results[i].Chunks = s.name, s.description, s.dims, s.chunks
		results[i].Median = summarise(results[i].Reps)
		results[i].CPUOverParts = report.cpuOverParts(results[i])
	}
	report.Runs = results
	report.DocsCorpus = r.docs
	report.StormIdeal = stormIdeal(report)
	report.Reuse = reuseStats(report, r.reuse)
	report.Migration = migrationStats(report)
	report.BackfillLatency = backfillLatencyStats(report)
	report.Bulk = bulkStats(report)
	report.BulkReuse = bulkReuseStats(report, r.reuse)
	report.Ratios = ratios(report, cfg)
	report.Errors = errs
	if err := writeJSON(cfg.Out, report); err != nil {
		return report, fmt.Errorf("write %s: %w", cfg.Out, err)
	}
	if err := writeMarkdown(stdout, report); err != nil {
		return report, err
	}
	fmt.Fprintf(stderr, "results written to %s\n", cfg.Out)
	if len(errs) > 0 {
		return report, fmt.Errorf("%d run(s) failed:\n%s", len(errs), strings.Join(errs, "\n"))
	}
	return report, nil
}

// repeat runs every scenario cfg.Reps times, repetition by repetition, so
// that drift on the machine lands on every scenario alike. Failed runs are
// returned as messages and leave no figures.
func (r *runner) repeat(ctx context.Context, scenarios []scenario) ([]RunResult, map[string][]ceilingRep, []string) {
	cfg, log := r.cfg, r.log
	results := make([]RunResult, len(scenarios))
	ceilingReps := map[string][]ceilingRep{}
	var errs []string
	for rep := 1; rep <= cfg.Reps && ctx.Err() == nil; rep++ {
		if cfg.selected(ScenarioCeilings) {
			c, err := r.ceilings(ctx)
			if err != nil {
				errs = append(errs, fmt.Sprintf("rep %d ceilings: %v", rep, err))
			}
			for _, name := range ceilingNames {
				if v, ok := c[name]; ok {
					ceilingReps[name] = append(ceilingReps[name], v)
					fmt.Fprintf(log, "rep %d/%d ceiling %s: %.0f/s\n", rep, cfg.Reps, name, v.rate)
				}
			}
		}
		for i, s := range scenarios {
			if ctx.Err() != nil {
				break
			}
			res, err := s.run(ctx, rep)
			if err != nil {
				errs = append(errs, fmt.Sprintf("rep %d %s: %v", rep, s.name, err))
				fmt.Fprintf(log, "rep %d/%d %s: FAILED: %v\n", rep, cfg.Reps, s.name, err)
				continue
			}
			res.Rep = rep
			results[i].Reps = append(results[i].Reps, res)
			fmt.Fprintf(log, "rep %d/%d %s: %.0f chunks/s (%d stored, %d parked, p99 %.0f ms)\n",
				rep, cfg.Reps, s.name, res.ChunksPerSec, res.Stored, res.Parked, res.P99Ms)
		}
	}
	if err := ctx.Err(); err != nil {
		errs = append(errs, "interrupted: "+err.Error())
	}
	return results, ceilingReps, errs
}

// setup starts the infrastructure and builds the binaries.
func setup(ctx context.Context, cfg Config, stderr io.Writer) (*runner, func(), error) {
	fmt.Fprintln(stderr, "starting PostgreSQL and NATS, building binaries…")
	in, err := startInfra(ctx)
	if err != nil {
		return nil, nil, err
	}
	r := &runner{cfg: cfg, in: in, work: filepath.Join(in.env.Root(), "bench"), log: stderr, corpora: map[string]string{}}
	cleanup := func() {
		r.killAll()
		if err := in.close(); err != nil {
			fmt.Fprintln(stderr, "cleanup:", err)
		}
	}
	fail := func(err error) (*runner, func(), error) { cleanup(); return nil, nil, err }
	if err := mkdir(filepath.Join(r.work, "bin")); err != nil {
		return fail(err)
	}
	if cfg.ProfileDir != "" {
		if err := mkdir(cfg.ProfileDir); err != nil {
			return fail(err)
		}
		if err := in.enableStatements(ctx); err != nil {
			return fail(fmt.Errorf("load pg_stat_statements for --profile-dir: %w", err))
		}
	}
	if r.bins, err = newBinaries(cfg.BinDir, filepath.Join(r.work, "bin")); err != nil {
		return fail(err)
	}
	if err := r.bins.services(ctx); err != nil {
		return fail(err)
	}
	return r, cleanup, nil
}

// plan lists the selected end-to-end scenarios in the order a repetition
// runs them. Problems that rule a scenario out (River's module failing to
// build) are returned as errors for the report, not fatal.
func (r *runner) plan(ctx context.Context) ([]scenario, []string) {
	cfg := r.cfg
	var out []scenario
	var errs []string
	pipe := func(name, desc string, spec pipelineSpec) { out = append(out, r.pipeline(name, desc, spec)) }
	// The scale ratio needs the baseline, and the bulk run its live
	// requests per chunk, so both bring it along.
	if cfg.selected(ScenarioPipeline384) || cfg.selected(ScenarioScale) || cfg.selected(ScenarioBulk) {
		pipe(ScenarioPipeline384, "producer → 2 consumers → stored, 384 dims", pipelineSpec{dims: 384, chunks: cfg.Chunks})
	}
	// The migration is set against re-ingesting its corpus, so it brings
	// that run along.
	if cfg.selected(ScenarioPipeline768) || cfg.selected(ScenarioMigration) {
		pipe(ScenarioPipeline768, "as pipeline-384, 768 dims", pipelineSpec{dims: 768, chunks: cfg.Chunks})
	}
	if cfg.selected(ScenarioPoison) {
		pipe(ScenarioPoison, "384 dims, 5% poison chunks (400 invalid_input)",
			pipelineSpec{dims: 384, chunks: cfg.Chunks, poisonPercent: 5, faults: simFaults{poison: true}})
	}
	if cfg.selected(ScenarioPipelineDocs) {
		path, stats, err := r.docsCorpus(cfg.Chunks)
		if err != nil {
			errs = append(errs, fmt.Sprintf("%s: %v", ScenarioPipelineDocs, err))
		} else {
			r.docs, r.docsPath = &stats, path
			pipe(ScenarioPipelineDocs, fmt.Sprintf("384 dims, %d documents of %d–%d chunks (median %.0f)",
				stats.Documents, stats.MinChunks, stats.MaxChunks, stats.MedianChunks),
				pipelineSpec{dims: 384, chunks: stats.Chunks, corpus: path})
		}
	}
	if cfg.selected(ScenarioStorm429) {
		pipe(ScenarioStorm429, fmt.Sprintf("384 dims, %.0f%% of requests 429 with Retry-After: %d", stormRate429*100, stormRetryAfter),
			pipelineSpec{dims: 384, chunks: cfg.Chunks, faults: simFaults{rate429: stormRate429, retryAfter: stormRetryAfter}})
	}
	if cfg.selected(ScenarioSyncAlways) {
		pipe(ScenarioSyncAlways, "384 dims, nats-server with sync_interval: always (every write flushed before its PubAck)",
			pipelineSpec{dims: 384, chunks: cfg.Chunks, syncAlways: true})
	}
	if cfg.selected(ScenarioNaive) {
		pipe(ScenarioNaive, "sync publish, fetch 1, one HTTP call and one commit per chunk",
			pipelineSpec{dims: 384, chunks: cfg.Chunks, naive: true})
	}
	if cfg.selected(ScenarioRiver) {
		peer, err := r.bins.riverPeer(ctx)
		if err != nil {
			errs = append(errs, fmt.Sprintf("river: %v", err))
		} else {
			out = append(out, scenario{name: ScenarioRiver, dims: 384, chunks: cfg.Chunks,
				description: fmt.Sprintf("River: InsertMany, one job per chunk, MaxWorkers %d, FetchCooldown %s", cfg.RiverWorkers, cfg.RiverFetchCooldown),
				run:         func(ctx context.Context, _ int) (RepResult, error) { return r.runRiver(ctx, peer) }})
		}
	}
	if cfg.selected(ScenarioScaleOut) {
		for _, n := range scaleOutConsumers {
			pipe(scaleOutName(n), fmt.Sprintf("384 dims, %d consumer process(es) of one request of %d in flight, embed-sim %s a request",
				n, scaleOutBatch, scaleOutLatency),
				pipelineSpec{dims: 384, chunks: cfg.Chunks, consumers: n, faults: simFaults{latency: "fixed:" + scaleOutLatency},
					consumerEnv: []string{"CONSUMER_WORKERS=1", fmt.Sprintf("BATCH_SIZE=%d", scaleOutBatch), fmt.Sprintf("EMBED_MAX_INPUTS=%d", scaleOutBatch)}})
		}
	}
	if cfg.selected(ScenarioLatency) {
		out = append(out, r.latencyScenarios()...)
	}
	if cfg.selected(ScenarioQuota) {
		desc, spec := quotaScenario(cfg.Quick)
		pipe(ScenarioQuota, desc, spec)
	}
	if cfg.selected(ScenarioReuse) {
		if s, err := r.reuseScenario(); err != nil {
			errs = append(errs, fmt.Sprintf("%s: %v", ScenarioReuse, err))
		} else {
			out = append(out, s)
		}
	}
	if cfg.selected(ScenarioMigration) {
		out = append(out, r.migrationScenario())
	}
	if cfg.selected(ScenarioBackfillLatency) {
		out = append(out, r.backfillLatencyScenario())
	}
	if cfg.selected(ScenarioBulk) {
		out = append(out, r.bulkScenario())
	}
	if cfg.selected(ScenarioBulkReuse) {
		if s, err := r.bulkReuseScenario(); err != nil {
			errs = append(errs, fmt.Sprintf("%s: %v", ScenarioBulkReuse, err))
		} else {
			out = append(out, s)
		}
	}
	if cfg.selected(ScenarioScale) {
		pipe(ScenarioScale, fmt.Sprintf("as pipeline-384 at %d chunks", cfg.ScaleChunks), pipelineSpec{dims: 384, chunks: cfg.ScaleChunks, storage: true, vacuum: true})
	}
	if cfg.selected(ScenarioScale1M) {
		pipe(ScenarioScale1M, fmt.Sprintf("as pipeline-384 at %d chunks", cfg.Scale1MChunks), pipelineSpec{dims: 384, chunks: cfg.Scale1MChunks, storage: true, vacuum: true})
	}
	return out, errs
}

// pipeline is the scenario of one pipeline run, its services profiled
// when cfg.ProfileDir asks for it.
func (r *runner) pipeline(name, desc string, spec pipelineSpec) scenario {
	return scenario{name: name, description: desc, dims: spec.dims, chunks: spec.chunks,
		run: func(ctx context.Context, rep int) (RepResult, error) {
			s := spec
			if r.cfg.ProfileDir != "" && !s.naive {
				s.profile = filepath.Join(r.cfg.ProfileDir, fmt.Sprintf("%s-rep%d", name, rep))
			}
			return r.runPipeline(ctx, s)
		}}
}

// scaleOutConsumers are the consumer process counts of the scale-out runs.
var scaleOutConsumers = []int{1, 2, 4}

// scaleOutLatency is embed-sim's latency in the scale-out runs, and
// scaleOutBatch the chunks of each consumer's one request in flight: the
// embedder, not CPU, is meant to be the limit there, as with a provider
// that serves each client one request at a time. Four such consumers
// ask for 4 × 16 / 100 ms = 640 chunks/s, well below what two cores
// sustain, so the ratio 4 / 1 shows how consumers scale, not the CPU.
const (
	scaleOutLatency = "100ms"
	scaleOutBatch   = 16
)

// scaleOutName names the scale-out run with n consumer processes.
func scaleOutName(n int) string { return fmt.Sprintf("%s-%d", ScenarioScaleOut, n) }

func host() Host {
	h := Host{GoVersion: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH, CPUs: runtime.NumCPU()}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		h.Kernel = strings.TrimSpace(string(b))
	}
	return h
}
