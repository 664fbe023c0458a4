package bench

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/sluicehq/sluice/internal/content/chunk"
	"github.com/sluicehq/sluice/internal/ingest/backfill"
	"github.com/sluicehq/sluice/internal/store/generation"
)

// ScenarioMigration is a model change on a stored corpus: Config.Chunks
// chunks stored at 384 dimensions, then an index generation at 768
// created and backfilled by the running consumers until it is ready,
// set against re-ingesting the same corpus into a fresh 768-dimension
// database (the pipeline-768 run, which the migration brings along).
const ScenarioMigration = "migration"

// The model change the migration makes: from the pipeline's 384
// dimensions to migrationDims, with another model name, so that every
// vector of the new generation is the new model's.
const (
	migrationFromDims = 384
	migrationDims     = 768
	migrationModel    = "embed-sim-2"
)

// Names of the migration's ratios.
const (
	// RatioMigrationCPU is the migration's CPU per chunk, every process
	// from the generation's creation to ready, over the pipeline-768
	// run's: what a model change costs against re-ingesting the corpus.
	RatioMigrationCPU = "model migration / re-ingest, CPU per chunk (384 → 768 dims)"
	// RatioMigrationWall is the migration's time from creation to ready
	// over the pipeline-768 run's, at the same corpus size.
	RatioMigrationWall = "model migration / re-ingest, wall time to ready (384 → 768 dims)"
	// RatioMigrationVectors is RatioMigrationWall up to the new
	// generation's last vector rather than to ready: without the wait
	// for the planner's next check (backfill.DefaultCheckInterval).
	RatioMigrationVectors = "model migration / re-ingest, wall time to the last vector (384 → 768 dims)"
	// RatioMigrationVectorsCPU is RatioMigrationCPU up to the new
	// generation's last vector, for the same reason.
	RatioMigrationVectorsCPU = "model migration / re-ingest, CPU per chunk to the last vector (384 → 768 dims)"
)

// MigrationRep is what one repetition of the migration measured beyond
// its RepResult, whose Seconds run from the generation's creation to
// ready and whose CPU is every process's over that window.
type MigrationRep struct {
	// Chunks are the stored chunks the generation was backfilled from.
	Chunks int `json:"chunks"`
	// ProviderInputs are the inputs embed-sim was sent for it.
	ProviderInputs int `json:"provider_inputs"`
	// VectorsSeconds is from the creation to the generation's last
	// vector written.
	VectorsSeconds float64 `json:"vectors_seconds"`
	// VectorsCPUPer1k is every process's CPU per 1,000 chunks up to
	// when the generation held a vector of each; 0 if unseen.
	VectorsCPUPer1k float64 `json:"vectors_cpu_s_per_1k,omitempty"`
	// Owed and Parked are the generation's once ready; both must be 0.
	Owed   int64 `json:"owed"`
	Parked int64 `json:"parked"`
}

// MigrationStats is the migration's medians beside the re-ingest's.
type MigrationStats struct {
	Chunks   int `json:"chunks"`
	FromDims int `json:"from_dims"`
	ToDims   int `json:"to_dims"`
	// ReadySeconds and VectorsSeconds are from creation to ready and to
	// the last vector; ChunksPerSec is Chunks over ReadySeconds.
	ReadySeconds   float64 `json:"ready_seconds"`
	VectorsSeconds float64 `json:"vectors_seconds"`
	ChunksPerSec   float64 `json:"chunks_per_sec"`
	ProviderInputs float64 `json:"provider_inputs"`
	// ServiceCPUPer1k is the consumers' CPU per 1,000 chunks and
	// TotalCPUPer1k every process's, embed-sim, PostgreSQL and NATS
	// included.
	ServiceCPUPer1k float64 `json:"service_cpu_s_per_1k"`
	TotalCPUPer1k   float64 `json:"total_cpu_s_per_1k"`
	// VectorsCPUPer1k is TotalCPUPer1k up to the last vector: without
	// the processes' idle wait for the planner's check.
	VectorsCPUPer1k float64 `json:"vectors_cpu_s_per_1k,omitempty"`
	// Owed and Parked are the most any repetition left.
	Owed   int64 `json:"owed"`
	Parked int64 `json:"parked"`
	// ReingestSeconds, ReingestChunksPerSec and ReingestCPUPer1k are
	// the pipeline-768 run's; 0 without it.
	ReingestSeconds      float64 `json:"reingest_seconds,omitempty"`
	ReingestChunksPerSec float64 `json:"reingest_chunks_per_sec,omitempty"`
	ReingestCPUPer1k     float64 `json:"reingest_total_cpu_s_per_1k,omitempty"`
	// CPURatio, WallRatio, VectorsRatio and VectorsCPURatio are the
	// migration's over the re-ingest's; 0 without both runs.
	CPURatio        float64 `json:"cpu_ratio,omitempty"`
	WallRatio       float64 `json:"wall_ratio,omitempty"`
	VectorsRatio    float64 `json:"vectors_ratio,omitempty"`
	VectorsCPURatio float64 `json:"vectors_cpu_ratio,omitempty"`
}

// migrationStats is the migration run's MigrationStats in r, or nil
// without one.
func migrationStats(r *Report) *MigrationStats {
	run := r.measured(ScenarioMigration)
	if run == nil {
		return nil
	}
	s := &MigrationStats{Chunks: run.Chunks, FromDims: migrationFromDims, ToDims: migrationDims,
		ChunksPerSec: run.Median.ChunksPerSec, ServiceCPUPer1k: run.Median.ServiceCPUPer1k, TotalCPUPer1k: run.Median.TotalCPUPer1k}
	var ready, vectors, vectorsCPU, inputs []float64
	for _, rep := range run.Reps {
		ready = append(ready, rep.Seconds)
		if m := rep.Migration; m != nil {
			vectors = append(vectors, m.VectorsSeconds)
			vectorsCPU = append(vectorsCPU, m.VectorsCPUPer1k)
			inputs = append(inputs, float64(m.ProviderInputs))
			s.Owed, s.Parked = max(s.Owed, m.Owed), max(s.Parked, m.Parked)
		}
	}
	s.ReadySeconds, s.VectorsSeconds, s.ProviderInputs = median(ready), median(vectors), median(inputs)
	s.VectorsCPUPer1k = median(vectorsCPU)
	base := r.measured(ScenarioPipeline768)
	if base == nil || base.Median.ChunksPerSec <= 0 {
		return s
	}
	s.ReingestChunksPerSec, s.ReingestCPUPer1k = base.Median.ChunksPerSec, base.Median.TotalCPUPer1k
	s.ReingestSeconds = float64(base.Chunks) / base.Median.ChunksPerSec
	// Rates, not seconds, so that the ratios hold if the two runs'
	// corpora ever differ in size.
	if s.ChunksPerSec > 0 {
		s.WallRatio = s.ReingestChunksPerSec / s.ChunksPerSec
	}
	if s.VectorsSeconds > 0 {
		s.VectorsRatio = s.ReingestChunksPerSec / (float64(s.Chunks) / s.VectorsSeconds)
	}
	if s.ReingestCPUPer1k > 0 {
		s.CPURatio = s.TotalCPUPer1k / s.ReingestCPUPer1k
		s.VectorsCPURatio = s.VectorsCPUPer1k / s.ReingestCPUPer1k
	}
	return s
}

// migrationRatios are the migration's ratios, 0 without its runs.
func migrationRatios(s *MigrationStats) (cpu, wall, vectors, vectorsCPU float64) {
	if s == nil {
		return 0, 0, 0, 0
	}
	return s.CPURatio, s.WallRatio, s.VectorsRatio, s.VectorsCPURatio
}

// migrationScenario is the migration's scenario.
func (r *runner) migrationScenario() scenario {
	return scenario{name: ScenarioMigration, dims: migrationDims, chunks: r.cfg.Chunks,
		description: fmt.Sprintf("%d chunks stored at %d dims, then a generation at %d dims (%s) backfilled by the %d consumers "+
			"to ready, measured from its creation (no latency: no fresh chunk); against pipeline-768", r.cfg.Chunks, migrationFromDims, migrationDims,
			migrationModel, consumers),
		run: func(ctx context.Context, _ int) (RepResult, error) { return r.runMigration(ctx) }}
}

// runMigration runs one repetition of the migration: the corpus stored
// at 384 dimensions by the pipeline, then a generation at 768 created
// while the same consumers and embed-sim run, and measured until it is
// ready. The generation must end with nothing owed or parked, a vector
// of every chunk, and reconcile finding nothing wrong.
func (r *runner) runMigration(ctx context.Context) (RepResult, error) {
	defer r.killAll()
	n := r.cfg.Chunks
	corpus, err := r.corpus(n, 0)
	if err != nil {
		return RepResult{}, err
	}
	db, broker, err := r.in.fresh(ctx, migrationFromDims, false)
	if err != nil {
		return RepResult{}, err
	}
	defer db.drop()
	f, err := r.startFleet(pipelineSpec{dims: migrationFromDims, chunks: n}, db, broker)
	if err != nil {
		return RepResult{}, err
	}
	if _, _, err := f.produce(ctx, corpus, benchSource, n); err != nil {
		return RepResult{}, fmt.Errorf("store the corpus: %w", err)
	}
	w, err := startWindow(ctx, f)
	if err != nil {
		return RepResult{}, err
	}
	gen, err := createGeneration(ctx, db, "a model migration, measured")
	if err != nil {
		return RepResult{}, err
	}
	g, toVectors, err := waitReady(ctx, db, gen, n, settleTimeout(n)+2*backfill.DefaultCheckInterval, w)
	if err != nil {
		return RepResult{}, err
	}
	res, m, err := w.end(ctx, n)
	if err != nil {
		return RepResult{}, err
	}
	mig, err := checkMigration(ctx, db, g, n, w.start)
	if err != nil {
		return RepResult{}, err
	}
	mig.ProviderInputs, mig.VectorsCPUPer1k = m.inputs, toVectors
	if err := checkReconciled(ctx, db, broker, "migration"); err != nil {
		return RepResult{}, err
	}
	if err := f.stop(); err != nil {
		return RepResult{}, err
	}
	res.Processes = w.usage(f.watched(), m.cpu)
	cpuPer1k(&res, n, "embed-sim")
	res.Stored, res.Parked, res.Migration = n, int(mig.Parked), mig
	return res, nil
}

// createGeneration registers a building generation at migrationDims
// with migrationModel and the producer's chunking, as sluice index
// create --execute does.
func createGeneration(ctx context.Context, db *database, reason string) (int, error) {
	c, err := generation.New(db.pool).Create(ctx, generation.Spec{Model: migrationModel, Dims: migrationDims,
		Chunking: generation.Chunking{Size: chunk.DefaultSize, Overlap: chunk.DefaultOverlap, Unit: string(chunk.DefaultUnit)}},
		generation.Request{By: "sluice-bench", Reason: reason, Execute: true})
	if err != nil {
		return 0, fmt.Errorf("create generation: %w", err)
	}
	return c.Generation, nil
}

// waitReady polls until generation gen is ready; a process of w's
// fleet that fails ends the wait. It also returns every process's CPU
// per 1,000 chunks from w's start to when the generation held a vector
// of each of the chunks, counted once a second (a count of its rows,
// which costs PostgreSQL a little), or 0 if that went unseen.
func waitReady(ctx context.Context, db *database, gen, chunks int, timeout time.Duration, w *window) (generation.Generation, float64, error) {
	var g generation.Generation
	var toVectors float64
	var counted time.Time
	err := pollUntil(ctx, time.Now().Add(timeout), w.f.watched(), fmt.Sprintf("generation %d still building", gen), func() (bool, error) {
		var err error
		if g, err = generation.Get(ctx, db.pool, gen); err != nil || g.Status == generation.Ready {
			return true, err
		}
		if toVectors > 0 || time.Since(counted) < time.Second {
			return false, nil
		}
		counted = time.Now()
		vectors, err := db.count(ctx, `SELECT count(*) FROM generation_embeddings WHERE generation = $1`, gen)
		if err != nil || vectors < chunks {
			return false, err
		}
		res, d, err := w.end(ctx, chunks)
		toVectors = d.total(res) / float64(chunks) * 1000
		return false, err
	})
	return g, toVectors, err
}

// checkMigration fails unless ready generation g owes nothing, has
// nothing parked and holds a vector of each of the chunks; it returns
// what it counted, and when the last vector was written after start.
func checkMigration(ctx context.Context, db *database, g generation.Generation, chunks int, start time.Time) (*MigrationRep, error) {
	p, err := generation.ProgressOf(ctx, db.pool, g)
	if err != nil {
		return nil, err
	}
	m := &MigrationRep{Chunks: chunks, Owed: p.Owed, Parked: p.Parked}
	if p.Owed != 0 || p.Parked != 0 || p.Stored != int64(chunks) {
		return m, fmt.Errorf("generation %d ready with %d of %d chunks stored, %d owed, %d parked", g.ID, p.Stored, chunks, p.Owed, p.Parked)
	}
	var last time.Time
	if err := db.pool.QueryRow(ctx, `SELECT max(updated_at) FROM generation_embeddings WHERE generation = $1`, g.ID).Scan(&last); err != nil {
		return m, fmt.Errorf("generation %d's last vector: %w", g.ID, err)
	}
	m.VectorsSeconds = last.Sub(start).Seconds()
	return m, nil
}

// writeMigration prints what the model migration cost beside the
// re-ingest of the same corpus.
func writeMigration(b *strings.Builder, r *Report) {
	s := r.Migration
	if s == nil {
		return
	}
	fmt.Fprintf(b, "\nmigration: %d chunks from %d to %d dims: ready %.1f s after its creation (last vector at %.1f s), %s chunks/s, "+
		"%.3f CPU s per 1k chunks to ready (consumers %.3f; %.3f to the last vector), %.0f provider inputs; %d owed, %d parked, reconcile clean",
		s.Chunks, s.FromDims, s.ToDims, s.ReadySeconds, s.VectorsSeconds, num(s.ChunksPerSec), s.TotalCPUPer1k, s.ServiceCPUPer1k,
		s.VectorsCPUPer1k, s.ProviderInputs, s.Owed, s.Parked)
	if s.ReingestChunksPerSec > 0 {
		fmt.Fprintf(b, ". Re-ingest (%s): %.1f s, %s chunks/s, %.3f CPU s per 1k chunks; migration / re-ingest: CPU %.2f to ready, "+
			"%.2f to the last vector; wall time %.2f to ready, %.2f to the last vector", ScenarioPipeline768, s.ReingestSeconds,
			num(s.ReingestChunksPerSec), s.ReingestCPUPer1k, s.CPURatio, s.VectorsCPURatio, s.WallRatio, s.VectorsRatio)
	}
	b.WriteString("\n")
}
