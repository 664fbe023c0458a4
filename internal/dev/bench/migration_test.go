package bench

import (
	"math"
	"strings"
	"testing"
)

// The migration is set against re-ingesting its corpus: CPU per chunk
// and wall time over pipeline-768's, each the medians of the
// repetitions, the CPU held to its target and the wall times reported;
// without the re-ingest run the ratios have no value and no verdict.
func TestMigrationRatios(t *testing.T) {
	t.Parallel()
	rep := func(seconds, vectors float64, owed, parked int64) RepResult {
		return RepResult{Seconds: seconds, Migration: &MigrationRep{Chunks: 10_000, ProviderInputs: 10_000,
			VectorsSeconds: vectors, VectorsCPUPer1k: 0.5, Owed: owed, Parked: parked}}
	}
	migration := RunResult{Scenario: ScenarioMigration, Chunks: 10_000,
		Reps:   []RepResult{rep(20, 4, 0, 0), rep(25, 5, 0, 2), rep(40, 8, 0, 0)},
		Median: Summary{ChunksPerSec: 400, TotalCPUPer1k: 1.2, ServiceCPUPer1k: 0.6}}
	reingest := RunResult{Scenario: ScenarioPipeline768, Chunks: 10_000, Reps: []RepResult{{}},
		Median: Summary{ChunksPerSec: 2_000, TotalCPUPer1k: 1.5}}
	r := &Report{Runs: []RunResult{reingest, migration}}
	r.Migration = migrationStats(r)
	s := r.Migration
	if s == nil || s.ReadySeconds != 25 || s.VectorsSeconds != 5 || s.ReingestSeconds != 5 || s.Parked != 2 || s.Owed != 0 {
		t.Fatalf("migration stats %+v: want ready 25 s, last vector 5 s, re-ingest 5 s, the most parked of any rep", s)
	}
	got := map[string]Ratio{}
	for _, q := range ratios(r, Config{Chunks: 10_000}) {
		got[q.Name] = q
	}
	for name, want := range map[string]struct {
		value float64
		met   *bool
	}{
		RatioMigrationCPU:        {0.8, ptr(true)},
		RatioMigrationVectorsCPU: {1.0 / 3, nil},
		RatioMigrationWall:       {5, nil},
		RatioMigrationVectors:    {1, nil},
	} {
		q := got[name]
		if math.Abs(q.Value-want.value) > 1e-9 || (q.Met == nil) != (want.met == nil) || (q.Met != nil && *q.Met != *want.met) {
			t.Errorf("%s: %+v, want %v met=%v", name, q, want.value, want.met)
		}
	}
	var b strings.Builder
	writeMigration(&b, r)
	for _, want := range []string{"ready 25.0 s after its creation (last vector at 5.0 s)", "0 owed, 2 parked",
		"migration / re-ingest: CPU 0.80 to ready, 0.33 to the last vector; wall time 5.00 to ready, 1.00 to the last vector"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("report line lacks %q: %s", want, b.String())
		}
	}

	alone := &Report{Runs: []RunResult{migration}}
	alone.Migration = migrationStats(alone)
	for _, q := range ratios(alone, Config{Chunks: 10_000}) {
		if (q.Name == RatioMigrationCPU || q.Name == RatioMigrationWall) && (q.Value != 0 || q.Met != nil) {
			t.Errorf("%s without a re-ingest run: %+v", q.Name, q)
		}
	}
	if none := migrationStats(&Report{Runs: []RunResult{reingest}}); none != nil {
		t.Errorf("migration stats without a migration run: %+v", none)
	}
}

func ptr[T any](v T) *T { return &v }
