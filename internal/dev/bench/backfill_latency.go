package bench

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/internal/dev/localenv"
	"github.com/sluicehq/sluice/internal/store/manifest"
)

// ScenarioBackfillLatency is the end-to-end latency of fresh documents
// with and without a backfill running: Config.ScaleChunks chunks
// stored, then the latency-bound run's load of fresh documents (see
// latencyRuns) once alone and once while a generation at 768
// dimensions over the stored chunks is being backfilled, by the same
// consumer against the same embed-sim.
const ScenarioBackfillLatency = "backfill-latency"

// RatioBackfillLatencyP99 is the fresh documents' p99 with a backfill
// running over their p99 without.
const RatioBackfillLatencyP99 = "fresh documents' p99 with a backfill running / without"

// backfillLatencyTarget is RatioBackfillLatencyP99's target: live work
// keeps priority over a backfill.
const backfillLatencyTarget = 1.5

// backfillLatencyLoad is the latency-bound run whose load and
// consumer the scenario uses: one consumer process whose batches are one
// request each, against an embed-sim that answers in latencyBound, so
// that the embedder, not the two cores, sets the fresh documents'
// latency when no backfill runs.
const backfillLatencyLoad = ScenarioLatency + "-bound"

// backfillLatencyWarmup is the most chunks of the unmeasured load that
// comes first.
const backfillLatencyWarmup = 500

// cpuBoundShare is the share of the machine's CPUs busy from which a
// load counts as limited by the CPU.
const cpuBoundShare = 0.9

// BackfillLatencyRep is one repetition's two loads of fresh documents.
type BackfillLatencyRep struct {
	// StoredChunks are the chunks the generation backfills, and
	// FreshChunks each load's.
	StoredChunks int `json:"stored_chunks"`
	FreshChunks  int `json:"fresh_chunks"`
	// Without* are the load without a backfill, With* the load with one:
	// latency percentiles in milliseconds, seconds from the producer's
	// start to the load's last chunk stored, and the share of the
	// machine's CPUs its processes, PostgreSQL and NATS kept busy.
	WithoutP50Ms   float64 `json:"without_p50_ms"`
	WithoutP99Ms   float64 `json:"without_p99_ms"`
	WithoutSeconds float64 `json:"without_seconds"`
	WithoutCPUBusy float64 `json:"without_cpu_busy"`
	WithP50Ms      float64 `json:"with_p50_ms"`
	WithP99Ms      float64 `json:"with_p99_ms"`
	WithSeconds    float64 `json:"with_seconds"`
	WithCPUBusy    float64 `json:"with_cpu_busy"`
	// Backfilled are the vectors the generation got during the load
	// with the backfill.
	Backfilled int `json:"backfilled"`
}

// BackfillLatencyStats is the medians of the repetitions' two loads,
// their p99 ratio, and what limits it when it misses its target.
type BackfillLatencyStats struct {
	StoredChunks   int     `json:"stored_chunks"`
	FreshChunks    int     `json:"fresh_chunks"`
	WithoutP50Ms   float64 `json:"without_p50_ms"`
	WithoutP99Ms   float64 `json:"without_p99_ms"`
	WithoutSeconds float64 `json:"without_seconds"`
	WithoutCPUBusy float64 `json:"without_cpu_busy"`
	WithP50Ms      float64 `json:"with_p50_ms"`
	WithP99Ms      float64 `json:"with_p99_ms"`
	WithSeconds    float64 `json:"with_seconds"`
	WithCPUBusy    float64 `json:"with_cpu_busy"`
	Backfilled     float64 `json:"backfilled"`
	// P99Ratio is WithP99Ms over WithoutP99Ms.
	P99Ratio float64 `json:"p99_ratio"`
	// Limit says what limits the ratio when it is over its target;
	// empty otherwise.
	Limit string `json:"limit,omitempty"`
}

// backfillLatencyStats is the backfill-latency run's stats in r, or nil
// without one.
func backfillLatencyStats(r *Report) *BackfillLatencyStats {
	run := r.measured(ScenarioBackfillLatency)
	if run == nil {
		return nil
	}
	var reps []BackfillLatencyRep
	for _, rep := range run.Reps {
		if rep.BackfillLatency != nil {
			reps = append(reps, *rep.BackfillLatency)
		}
	}
	if len(reps) == 0 {
		return nil
	}
	pick := func(f func(BackfillLatencyRep) float64) float64 {
		v := make([]float64, len(reps))
		for i, rep := range reps {
			v[i] = f(rep)
		}
		return median(v)
	}
	s := &BackfillLatencyStats{StoredChunks: reps[0].StoredChunks, FreshChunks: reps[0].FreshChunks,
		WithoutP50Ms:   pick(func(x BackfillLatencyRep) float64 { return x.WithoutP50Ms }),
		WithoutP99Ms:   pick(func(x BackfillLatencyRep) float64 { return x.WithoutP99Ms }),
		WithoutSeconds: pick(func(x BackfillLatencyRep) float64 { return x.WithoutSeconds }),
		WithoutCPUBusy: pick(func(x BackfillLatencyRep) float64 { return x.WithoutCPUBusy }),
		WithP50Ms:      pick(func(x BackfillLatencyRep) float64 { return x.WithP50Ms }),
		WithP99Ms:      pick(func(x BackfillLatencyRep) float64 { return x.WithP99Ms }),
		WithSeconds:    pick(func(x BackfillLatencyRep) float64 { return x.WithSeconds }),
		WithCPUBusy:    pick(func(x BackfillLatencyRep) float64 { return x.WithCPUBusy }),
		Backfilled:     pick(func(x BackfillLatencyRep) float64 { return float64(x.Backfilled) }),
	}
	if s.WithoutP99Ms > 0 {
		s.P99Ratio = s.WithP99Ms / s.WithoutP99Ms
	}
	s.Limit = backfillLatencyLimit(*s)
	return s
}

// backfillLatencyLimit says what limits the fresh documents' latency
// with a backfill running when the ratio is over its target: the CPU
// when the machine was busy, otherwise the consumer and the provider
// the fresh chunks share with the backfill's batches. Empty when the
// ratio meets its target or was not measured.
func backfillLatencyLimit(s BackfillLatencyStats) string {
	if s.P99Ratio <= backfillLatencyTarget || s.WithSeconds <= 0 || s.WithoutSeconds <= 0 {
		return ""
	}
	without, with := float64(s.FreshChunks)/s.WithoutSeconds, float64(s.FreshChunks)/s.WithSeconds
	backfill := s.Backfilled / s.WithSeconds
	if s.WithCPUBusy >= cpuBoundShare {
		return fmt.Sprintf("the CPU: the machine was %.0f%% busy with the backfill (%.0f%% without), so fresh chunks waited for a core; "+
			"the fresh load fell from %s to %s chunks/s while the backfill wrote %s chunks/s",
			100*s.WithCPUBusy, 100*s.WithoutCPUBusy, num(without), num(with), num(backfill))
	}
	return fmt.Sprintf("not the CPU (%.0f%% busy, %.0f%% without): fresh chunks shared the consumer and the provider with the backfill's "+
		"batches (BACKFILL_WORKERS pull loops, BATCH_SIZE each); the fresh load fell from %s to %s chunks/s while the backfill wrote %s chunks/s",
		100*s.WithCPUBusy, 100*s.WithoutCPUBusy, num(without), num(with), num(backfill))
}

// backfillLatencyRatio is the p99 ratio, 0 without the run.
func backfillLatencyRatio(s *BackfillLatencyStats) float64 {
	if s == nil {
		return 0
	}
	return s.P99Ratio
}

// backfillLatencyScenario is the backfill-latency scenario.
func (r *runner) backfillLatencyScenario() scenario {
	l := latencyRunNamed(backfillLatencyLoad)
	fresh := l.spec(r.cfg).chunks
	return scenario{name: ScenarioBackfillLatency, dims: migrationFromDims, chunks: fresh,
		description: fmt.Sprintf("%d chunks stored, then %d fresh ones as %s (%s), once alone and once while a generation "+
			"at %d dims over the stored chunks is backfilled; figures are the load with the backfill", r.cfg.ScaleChunks, fresh,
			backfillLatencyLoad, l.describe(), migrationDims),
		run: func(ctx context.Context, _ int) (RepResult, error) { return r.runBackfillLatency(ctx, l) }}
}

// latencyRunNamed is the latency-bound run named name.
func latencyRunNamed(name string) latencyRun {
	for _, l := range latencyRuns() {
		if l.name == name {
			return l
		}
	}
	panic("bench: no latency run " + name)
}

// runBackfillLatency runs one repetition: the stored corpus through the
// pipeline at full speed, then, against l's consumer and embed-sim, a
// short load to warm them and a load of fresh documents; a generation created and its backfill seen
// writing; a second load of other fresh documents. The generation must
// still owe chunks stored before it existed when the second load ends,
// or the backfill may not have run throughout it.
func (r *runner) runBackfillLatency(ctx context.Context, l latencyRun) (RepResult, error) {
	defer r.killAll()
	spec := l.spec(r.cfg)
	stored, fresh := r.cfg.ScaleChunks, spec.chunks
	db, broker, err := r.in.fresh(ctx, migrationFromDims, false)
	if err != nil {
		return RepResult{}, err
	}
	defer db.drop()
	if err := r.storeCorpus(ctx, db, broker, stored); err != nil {
		return RepResult{}, err
	}
	f, err := r.startFleet(spec, db, broker)
	if err != nil {
		return RepResult{}, err
	}
	rep := &BackfillLatencyRep{StoredChunks: stored, FreshChunks: fresh}
	// A first, unmeasured load warms the consumer, embed-sim and
	// PostgreSQL, which would otherwise slow the load without a backfill
	// alone, since it comes first.
	warm := min(fresh, backfillLatencyWarmup)
	if _, err := r.freshLoad(ctx, f, 0, stored+warm, warm); err != nil {
		return RepResult{}, fmt.Errorf("warm-up load: %w", err)
	}
	without, err := r.freshLoad(ctx, f, 1, stored+warm+fresh, fresh)
	if err != nil {
		return RepResult{}, fmt.Errorf("load without a backfill: %w", err)
	}
	gen, err := createGeneration(ctx, db, "fresh documents' latency during a backfill, measured")
	if err != nil {
		return RepResult{}, err
	}
	if err := waitBackfilling(ctx, db, gen, f.watched()); err != nil {
		return RepResult{}, err
	}
	with, err := r.freshLoad(ctx, f, 2, stored+warm+2*fresh, fresh)
	if err != nil {
		return RepResult{}, fmt.Errorf("load with a backfill: %w", err)
	}
	if rep.Backfilled, err = backfilledDuring(ctx, db, gen, with.start, stored+warm+fresh); err != nil {
		return RepResult{}, err
	}
	if err := f.stop(); err != nil {
		return RepResult{}, err
	}
	rep.WithoutP50Ms, rep.WithoutP99Ms, rep.WithoutSeconds, rep.WithoutCPUBusy = without.p50, without.p99, without.seconds, without.busy
	rep.WithP50Ms, rep.WithP99Ms, rep.WithSeconds, rep.WithCPUBusy = with.p50, with.p99, with.seconds, with.busy
	res := with.res
	res.Processes = with.w.usage(append([]*proc{with.prod}, f.watched()...), with.cpu)
	cpuPer1k(&res, fresh, "embed-sim")
	res.Stored, res.BackfillLatency = fresh, rep
	return res, nil
}

// storeCorpus stores the generated corpus of n chunks in db through the
// pipeline, against consumers and an embed-sim of its own that it stops.
func (r *runner) storeCorpus(ctx context.Context, db *database, broker *localenv.NATS, n int) error {
	corpus, err := r.corpus(n, 0)
	if err != nil {
		return err
	}
	f, err := r.startFleet(pipelineSpec{dims: migrationFromDims, chunks: n}, db, broker)
	if err != nil {
		return err
	}
	if _, _, err := f.produce(ctx, corpus, benchSource, n); err != nil {
		return fmt.Errorf("store %d chunks: %w", n, err)
	}
	return f.stop()
}

// loadResult is one load of fresh documents.
type loadResult struct {
	start             time.Time
	p50, p99, seconds float64
	busy              float64
	res               RepResult
	w                 *window
	prod              *proc
	cpu               map[string]float64
}

// freshLoad runs the producer over the k-th fresh corpus of chunks
// records, as a source of its own, until the manifest holds rows, and
// measures its chunks' latency and the machine's CPU it took.
func (r *runner) freshLoad(ctx context.Context, f *fleet, k, rows, chunks int) (loadResult, error) {
	var out loadResult
	source := benchSource + "-fresh-" + strconv.Itoa(k)
	path := filepath.Join(r.work, fmt.Sprintf("%s-%d.jsonl", source, chunks))
	// Another seed: no fresh text is one the stored corpus holds, whose
	// vector the pipeline would reuse rather than embed.
	if _, err := writeCorpusFile(path, CorpusOptions{Records: chunks, Seed: r.cfg.Seed + uint64(k)}); err != nil {
		return out, err
	}
	w, err := startWindow(ctx, f)
	if err != nil {
		return out, err
	}
	start, prod, err := f.produce(ctx, path, source, rows)
	if err != nil {
		return out, err
	}
	res, d, err := w.end(ctx, chunks)
	if err != nil {
		return out, err
	}
	var last time.Time
	err = f.db.pool.QueryRow(ctx, `
		SELECT max(m.updated_at) FROM ingest_manifest m JOIN documents d USING (doc_id)
		WHERE d.source_id = $1 AND m.status = $2`, source, manifest.Stored).Scan(&last)
	if err != nil {
		return out, fmt.Errorf("last chunk of %s: %w", source, err)
	}
	if out.p50, out.p99, err = latencyOf(ctx, f.db, source); err != nil {
		return out, err
	}
	d.cpu[prod.role] = prod.usage().CPUSeconds
	busy := d.total(res)
	out.start, out.seconds, out.prod, out.w, out.cpu = start, last.Sub(start).Seconds(), prod, w, d.cpu
	out.busy = busy / (res.Seconds * float64(runtime.NumCPU()))
	res.Seconds, res.ChunksPerSec, res.P50Ms, res.P99Ms = out.seconds, float64(chunks)/out.seconds, out.p50, out.p99
	out.res = res
	return out, nil
}

// waitBackfilling waits until generation gen has its first vector: its
// backfill is running.
func waitBackfilling(ctx context.Context, db *database, gen int, watch []*proc) error {
	return pollUntil(ctx, time.Now().Add(time.Minute), watch, fmt.Sprintf("generation %d has no vector", gen), func() (bool, error) {
		var found bool
		err := db.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM generation_embeddings WHERE generation = $1)`, gen).Scan(&found)
		return found, err
	})
}

// backfilledDuring counts the vectors generation gen got since since,
// and fails unless it still lacks some of the owed chunks that were
// stored before it existed: otherwise its backfill may have ended before
// the load did. (Its status says less: the planner marks it ready only
// at its next check, up to backfill.DefaultCheckInterval later.)
func backfilledDuring(ctx context.Context, db *database, gen int, since time.Time, owed int) (int, error) {
	var total, recent int
	err := db.pool.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE updated_at >= $2)
		FROM generation_embeddings WHERE generation = $1`, gen, since).Scan(&total, &recent)
	if err != nil {
		return 0, fmt.Errorf("generation %d's vectors: %w", gen, err)
	}
	if total >= owed {
		return recent, fmt.Errorf("generation %d held %d vectors when the fresh load ended, as many as the %d chunks stored before it: "+
			"the backfill may have ended before the load did; raise --scale-chunks", gen, total, owed)
	}
	return recent, nil
}

// writeBackfillLatency prints the fresh documents' latency with and
// without a backfill, and what limits the ratio when it is over target.
func writeBackfillLatency(b *strings.Builder, r *Report) {
	s := r.BackfillLatency
	if s == nil {
		return
	}
	fmt.Fprintf(b, "\nbackfill-latency: %d fresh chunks over %d stored: p50 / p99 %.0f / %.0f ms alone (%.1f s, CPUs %.0f%% busy), "+
		"%.0f / %.0f ms while a backfill wrote %.0f vectors (%.1f s, CPUs %.0f%% busy); p99 ratio %.2f (target ≤ %.1f)",
		s.FreshChunks, s.StoredChunks, s.WithoutP50Ms, s.WithoutP99Ms, s.WithoutSeconds, 100*s.WithoutCPUBusy,
		s.WithP50Ms, s.WithP99Ms, s.Backfilled, s.WithSeconds, 100*s.WithCPUBusy, s.P99Ratio, backfillLatencyTarget)
	if s.Limit != "" {
		fmt.Fprintf(b, "; over the target, limited by %s", s.Limit)
	}
	b.WriteString("\n")
}
