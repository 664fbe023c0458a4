package bench

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
)

// Report is everything one invocation measured; it is what --out holds.
type Report struct {
	// Date is when the invocation started, RFC 3339.
	Date string `json:"date"`
	// Host describes the machine.
	Host Host `json:"host"`
	// Settings are the resolved configuration.
	Settings Settings `json:"settings"`
	// Ceilings are the parts measured alone.
	Ceilings []CeilingResult `json:"ceilings"`
	// CombinedCeiling is 1 / Σ(1/xᵢ) over the embedder (base64, as the
	// consumer asks for), JetStream and PostgreSQL ceilings, in chunks/s;
	// 0 when any of them is missing.
	CombinedCeiling float64 `json:"combined_ceiling_chunks_per_sec"`
	// CombinedCeilingWithBookkeeping is 1 / Σ(1/xᵢ) over the same parts
	// and the bookkeeping ceiling, in chunks/s; 0 when any is missing.
	CombinedCeilingWithBookkeeping float64 `json:"combined_ceiling_with_bookkeeping_chunks_per_sec"`
	// PartsCPUPer1k is the CPU seconds per 1,000 chunks of the parts of
	// CombinedCeiling, summed: what a chunk costs if the pipeline added
	// nothing to its parts. 0 when any is missing.
	PartsCPUPer1k float64 `json:"parts_cpu_s_per_1k"`
	// PartsCPUPer1kWithBookkeeping adds the bookkeeping ceiling's CPU.
	PartsCPUPer1kWithBookkeeping float64 `json:"parts_with_bookkeeping_cpu_s_per_1k"`
	// DocsPartsCPUPer1k is PartsCPUPer1k over the pipeline-docs run's
	// chunks; absent without that run.
	DocsPartsCPUPer1k float64 `json:"docs_parts_cpu_s_per_1k,omitempty"`
	// DocsPartsCPUPer1kWithBookkeeping adds the bookkeeping ceiling over
	// the same chunks, each in its document; absent without that run.
	DocsPartsCPUPer1kWithBookkeeping float64 `json:"docs_parts_with_bookkeeping_cpu_s_per_1k,omitempty"`
	// PartsCPUPer1kByProcess is PartsCPUPer1kWithBookkeeping by process,
	// keyed as CeilingResult.CPUPer1kByProcess: where the four parts'
	// CPU goes, to set beside a run's. Empty when any part is missing.
	PartsCPUPer1kByProcess map[string]float64 `json:"parts_with_bookkeeping_cpu_s_per_1k_by_process,omitempty"`
	// Runs are the end-to-end runs, one per scenario.
	Runs []RunResult `json:"runs"`
	// Ratios compare runs of this invocation with each other, next to
	// their targets.
	Ratios []Ratio `json:"ratios"`
	// VectorSearch is the vector index, search latency and recall at the
	// search sizes; absent when the search scenario was not selected.
	VectorSearch *VectorSearch `json:"vector_search,omitempty"`
	// Extraction is the files of a document format read by the
	// extraction workers beside the extractor alone, by kind; absent
	// when the extract scenario was not selected.
	Extraction []Extraction `json:"extraction,omitempty"`
	// DocsCorpus is the corpus of the pipeline-docs run; absent without
	// that run.
	DocsCorpus *DocsStats `json:"docs_corpus,omitempty"`
	// StormIdeal is the 429 storm run's wait-bound ideal; absent without
	// a storm run and a clean one.
	StormIdeal *StormIdeal `json:"storm_ideal,omitempty"`
	// Reuse is the reuse run's corpus and what it sent to the embedder;
	// absent without that run.
	Reuse *ReuseStats `json:"reuse,omitempty"`
	// Migration is the model migration beside the re-ingest of the same
	// corpus; absent without the migration run.
	Migration *MigrationStats `json:"migration,omitempty"`
	// BackfillLatency is fresh documents' latency with and without a
	// backfill running; absent without the backfill-latency run.
	BackfillLatency *BackfillLatencyStats `json:"backfill_latency,omitempty"`
	// Bulk is the bulk run beside the live load of the same corpus;
	// absent without the bulk run.
	Bulk *BulkStats `json:"bulk,omitempty"`
	// BulkReuse is the bulk load of the reuse corpus; absent without
	// the bulk-reuse run.
	BulkReuse *BulkReuseStats `json:"bulk_reuse,omitempty"`
	// Errors lists the runs that failed; their scenarios have no figures.
	Errors []string `json:"errors,omitempty"`
}

// Host describes the machine the invocation ran on.
type Host struct {
	GoVersion string `json:"go_version"`
	OS        string `json:"os"`
	Arch      string `json:"arch"`
	CPUs      int    `json:"cpus"`
	Kernel    string `json:"kernel,omitempty"`
}

// Settings are the resolved configuration of an invocation.
type Settings struct {
	Quick        bool     `json:"quick"`
	Reps         int      `json:"reps"`
	Chunks       int      `json:"chunks"`
	ScaleChunks  int      `json:"scale_chunks"`
	Seed         uint64   `json:"seed"`
	Scenarios    []string `json:"scenarios"`
	Consumers    int      `json:"consumers"`
	RiverWorkers int      `json:"river_workers"`
	// RiverFetchCooldown is the River peer's FetchCooldown.
	RiverFetchCooldown string `json:"river_fetch_cooldown"`
	Profiled           bool   `json:"profiled,omitempty"`
	// Scale1MChunks is the size of the scale-1m run; 0 when it did not run.
	Scale1MChunks int `json:"scale_1m_chunks,omitempty"`
	// SearchSizes are the search scenario's row counts; absent when it
	// did not run.
	SearchSizes []int `json:"search_sizes,omitempty"`
}

// CeilingResult is one part measured alone.
type CeilingResult struct {
	// Name is embed-float, embed-base64, jetstream, postgres or
	// bookkeeping.
	Name string `json:"name"`
	// Unit is what Median counts per second: vectors, messages, rows or
	// chunks.
	Unit string `json:"unit"`
	// Dims and Items describe each repetition's work.
	Dims  int `json:"dims"`
	Items int `json:"items"`
	// Reps are the rates of the repetitions, per second.
	Reps []float64 `json:"reps"`
	// Median is the median rate, per second.
	Median float64 `json:"median_per_sec"`
	// CPUPer1k is the median CPU seconds per 1,000 items of everything
	// involved: the client in this process, and the server (embed-sim,
	// NATS or PostgreSQL).
	CPUPer1k float64 `json:"cpu_s_per_1k"`
	// CPUPer1kByProcess is the median of each process's share of it:
	// "clients" (this process, running Sluice's code as a producer or a
	// consumer would), "embed-sim", "postgres" and "nats".
	CPUPer1kByProcess map[string]float64 `json:"cpu_s_per_1k_by_process"`
}

// RunResult is one scenario's repetitions and their medians.
type RunResult struct {
	Scenario    string      `json:"scenario"`
	Description string      `json:"description"`
	Dims        int         `json:"dims"`
	Chunks      int         `json:"chunks"`
	Reps        []RepResult `json:"reps"`
	Median      Summary     `json:"median"`
	// CPUOverParts is the median TotalCPUPer1k over Report.PartsCPUPer1k:
	// how much CPU the run spends per chunk beyond what its parts cost
	// alone. 0 for a run at other dimensions than the ceilings', or
	// without ceilings.
	CPUOverParts float64 `json:"cpu_over_parts,omitempty"`
}

// RepResult is one repetition of one scenario.
type RepResult struct {
	Rep          int     `json:"rep"`
	Seconds      float64 `json:"seconds"`
	ChunksPerSec float64 `json:"chunks_per_sec"`
	Stored       int     `json:"stored"`
	Parked       int     `json:"parked"`
	// VacuumSeconds is how long paying the run's vacuum debt took once it
	// settled, and ChunksPerSecVacuumed the throughput with that time on
	// the clock; scale runs only (see vacuumRun). The run's PostgreSQL CPU
	// includes the vacuum's.
	VacuumSeconds        float64 `json:"vacuum_seconds,omitempty"`
	ChunksPerSecVacuumed float64 `json:"chunks_per_sec_vacuumed,omitempty"`
	// P50Ms and P99Ms are the end-to-end latency percentiles of stored
	// chunks, publish (or insert) to stored, in milliseconds.
	P50Ms float64 `json:"p50_ms"`
	P99Ms float64 `json:"p99_ms"`
	// EmbedRequests and Embed429 are the embedding requests embed-sim
	// received in the run and those it answered 429; pipeline runs only.
	EmbedRequests int `json:"embed_requests,omitempty"`
	Embed429      int `json:"embed_429,omitempty"`
	// Processes are the measured processes' own resource use.
	Processes []ProcUsage `json:"processes"`
	// PostgresCPUSeconds and NATSCPUSeconds are the servers' CPU time
	// during the run (backends included).
	PostgresCPUSeconds float64 `json:"postgres_cpu_seconds"`
	NATSCPUSeconds     float64 `json:"nats_cpu_seconds"`
	// ServiceCPUPer1k is the CPU seconds of the services under test
	// (producer and consumers, or their naive and River counterparts) per
	// 1,000 chunks; TotalCPUPer1k adds embed-sim, PostgreSQL and NATS.
	ServiceCPUPer1k float64 `json:"service_cpu_s_per_1k"`
	TotalCPUPer1k   float64 `json:"total_cpu_s_per_1k"`
	// CPUPer1kByProcess is the CPU seconds per 1,000 chunks of each
	// process by role, PostgreSQL and NATS included (as cpuPostgres and
	// cpuNATS).
	CPUPer1kByProcess map[string]float64 `json:"cpu_s_per_1k_by_process"`
	// Storage is the size of the pipeline's tables once the run settled;
	// scale runs only.
	Storage []TableSize `json:"storage,omitempty"`
	// Reuse is what the reuse scenario sent to the embedder; reuse runs
	// only.
	Reuse *ReuseRep `json:"reuse,omitempty"`
	// Migration is what the migration scenario counted; migration runs
	// only.
	Migration *MigrationRep `json:"migration,omitempty"`
	// BackfillLatency is the backfill-latency scenario's two loads;
	// backfill-latency runs only.
	BackfillLatency *BackfillLatencyRep `json:"backfill_latency,omitempty"`
	// Bulk is what the bulk scenario counted; bulk runs only.
	Bulk *BulkRep `json:"bulk,omitempty"`
}

// Summary holds the medians of a scenario's repetitions.
type Summary struct {
	ChunksPerSec float64 `json:"chunks_per_sec"`
	// VacuumSeconds and ChunksPerSecVacuumed are RepResult's medians.
	VacuumSeconds        float64            `json:"vacuum_seconds,omitempty"`
	ChunksPerSecVacuumed float64            `json:"chunks_per_sec_vacuumed,omitempty"`
	P50Ms                float64            `json:"p50_ms"`
	P99Ms                float64            `json:"p99_ms"`
	ServiceCPUPer1k      float64            `json:"service_cpu_s_per_1k"`
	TotalCPUPer1k        float64            `json:"total_cpu_s_per_1k"`
	PeakRSSMiB           map[string]float64 `json:"peak_rss_mib"`
	Stored               int                `json:"stored"`
	Parked               int                `json:"parked"`
	// EmbedRequests and Embed429 are RepResult's medians.
	EmbedRequests int `json:"embed_requests,omitempty"`
	Embed429      int `json:"embed_429,omitempty"`
	// CPUPer1kByProcess is RepResult.CPUPer1kByProcess's median by role.
	CPUPer1kByProcess map[string]float64 `json:"cpu_s_per_1k_by_process"`
}

// Ratio is one comparison between runs of the invocation.
type Ratio struct {
	Name string `json:"name"`
	// Value is the ratio; 0 when a run it needs is missing.
	Value float64 `json:"value"`
	// Target says what the ratio should be, such as "≥ 0.8"; empty when
	// the ratio is only reported.
	Target string `json:"target,omitempty"`
	// Met is whether Value meets Target; absent without a target or a value.
	Met *bool `json:"met,omitempty"`
}

// Run returns the run of scenario name, or nil.
func (r *Report) Run(name string) *RunResult {
	for i := range r.Runs {
		if r.Runs[i].Scenario == name {
			return &r.Runs[i]
		}
	}
	return nil
}

// measured is the run of scenario name in r if any repetition of it
// succeeded, or nil.
func (r *Report) measured(name string) *RunResult {
	if run := r.Run(name); run != nil && len(run.Reps) > 0 {
		return run
	}
	return nil
}

// summarise computes the medians of reps.
func summarise(reps []RepResult) Summary {
	var s Summary
	if len(reps) == 0 {
		return s
	}
	pick := func(f func(RepResult) float64) float64 {
		v := make([]float64, len(reps))
		for i, r := range reps {
			v[i] = f(r)
		}
		return median(v)
	}
	s.ChunksPerSec = pick(func(r RepResult) float64 { return r.ChunksPerSec })
	s.VacuumSeconds = pick(func(r RepResult) float64 { return r.VacuumSeconds })
	s.ChunksPerSecVacuumed = pick(func(r RepResult) float64 { return r.ChunksPerSecVacuumed })
	s.P50Ms = pick(func(r RepResult) float64 { return r.P50Ms })
	s.P99Ms = pick(func(r RepResult) float64 { return r.P99Ms })
	s.ServiceCPUPer1k = pick(func(r RepResult) float64 { return r.ServiceCPUPer1k })
	s.TotalCPUPer1k = pick(func(r RepResult) float64 { return r.TotalCPUPer1k })
	s.Stored = int(pick(func(r RepResult) float64 { return float64(r.Stored) }))
	s.Parked = int(pick(func(r RepResult) float64 { return float64(r.Parked) }))
	s.EmbedRequests = int(pick(func(r RepResult) float64 { return float64(r.EmbedRequests) }))
	s.Embed429 = int(pick(func(r RepResult) float64 { return float64(r.Embed429) }))
	s.PeakRSSMiB = medianByKey(reps, func(r RepResult) map[string]float64 {
		m := map[string]float64{}
		for _, p := range r.Processes {
			m[p.Role] = p.PeakRSSMiB
		}
		return m
	})
	s.CPUPer1kByProcess = medianByKey(reps, func(r RepResult) map[string]float64 { return r.CPUPer1kByProcess })
	return s
}

// medianByKey is the median of each key of the first repetition's map
// over every repetition's, a missing key counting as 0.
func medianByKey[T any](reps []T, f func(T) map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for key := range f(reps[0]) {
		v := make([]float64, len(reps))
		for i, r := range reps {
			v[i] = f(r)[key]
		}
		out[key] = median(v)
	}
	return out
}

// setCeilings fills the ceilings from their repetitions of items each,
// and what they add up to.
func (r *Report) setCeilings(reps map[string][]ceilingRep, items int) {
	r.Ceilings = nil
	for _, name := range ceilingNames {
		if len(reps[name]) == 0 {
			continue
		}
		c := CeilingResult{Name: name, Unit: ceilingUnits[name], Dims: ceilingDims, Items: items}
		var cpu []float64
		for _, rep := range reps[name] {
			c.Reps = append(c.Reps, rep.rate)
			cpu = append(cpu, rep.cpu.total()/float64(items)*1000)
		}
		c.Median, c.CPUPer1k = median(c.Reps), median(cpu)
		c.CPUPer1kByProcess = medianByKey(reps[name], func(rep ceilingRep) map[string]float64 { return rep.cpu.per1k(items) })
		r.Ceilings = append(r.Ceilings, c)
	}
	r.CombinedCeiling, r.PartsCPUPer1k, _ = combine(r.Ceilings, ceilingParts)
	_, r.DocsPartsCPUPer1k, _ = combine(r.Ceilings, ceilingDocsParts)
	_, r.DocsPartsCPUPer1kWithBookkeeping, _ = combine(r.Ceilings, DocsFourParts)
	r.CombinedCeilingWithBookkeeping, r.PartsCPUPer1kWithBookkeeping, r.PartsCPUPer1kByProcess =
		combine(r.Ceilings, append(slices.Clip(ceilingParts), ceilingBookkeeping))
}

// combine returns what the named ceilings add up to for a chunk that
// passes through each once: the rate 1 / Σ(1/xᵢ) of their medians, and
// the sum of their CPU per 1,000, in all and by process. All are zero
// when any is missing.
func combine(ceilings []CeilingResult, names []string) (rate, cpuPer1k float64, byProcess map[string]float64) {
	var inv float64
	byProcess = map[string]float64{}
	for _, name := range names {
		i := slices.IndexFunc(ceilings, func(c CeilingResult) bool { return c.Name == name })
		if i < 0 || ceilings[i].Median <= 0 {
			return 0, 0, nil
		}
		inv += 1 / ceilings[i].Median
		cpuPer1k += ceilings[i].CPUPer1k
		for k, v := range ceilings[i].CPUPer1kByProcess {
			byProcess[k] += v
		}
	}
	return 1 / inv, cpuPer1k, byProcess
}

// PartsByProcess is the named ceilings' CPU per 1,000 items summed by
// process, keyed as CeilingResult.CPUPer1kByProcess, or nil when any is
// missing.
func (r *Report) PartsByProcess(names []string) map[string]float64 {
	_, _, byProcess := combine(r.Ceilings, names)
	return byProcess
}

// cpuOverParts is run's RunResult.CPUOverParts in r.
func (r *Report) cpuOverParts(run RunResult) float64 {
	if run.Dims != ceilingDims || r.PartsCPUPer1k <= 0 || len(run.Reps) == 0 {
		return 0
	}
	return run.Median.TotalCPUPer1k / r.PartsCPUPer1k
}

// median returns the median of v (the mean of the middle two for an even
// count), or 0 for none.
func median(v []float64) float64 { return quantile(v, 0.5) }

// quantile returns the q-quantile of v, 0 ≤ q ≤ 1, interpolated between
// the two nearest values as PostgreSQL's percentile_cont does, or 0 for
// none.
func quantile(v []float64, q float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	pos := q * float64(len(s)-1)
	lo := int(pos)
	if lo+1 >= len(s) {
		return s[lo]
	}
	return s[lo] + (pos-float64(lo))*(s[lo+1]-s[lo])
}

// writeJSON writes the report to path, creating its directory.
func writeJSON(path string, r *Report) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}
