package manifest_test

import (
	"testing"

	"github.com/sluicehq/sluice/internal/store/manifest"
)

// ChunksByRun counts each run's chunks by status, its superseded ones
// not at all, and counts nothing for a run without chunks or one not
// asked for.
func TestChunksByRunCountsEachRunsChunksByStatus(t *testing.T) {
	t.Parallel()
	b := setup(t)
	chunks := map[string][]manifest.Status{
		"run-a": {manifest.Pending, manifest.Stored, manifest.Stored, manifest.Parked, manifest.Superseded},
		"run-b": {manifest.Stored, manifest.Parked, manifest.Parked},
		"run-s": {manifest.Superseded},
		"run-x": {manifest.Pending},
	}
	for run, statuses := range chunks {
		if _, err := b.pool.Exec(b.ctx, `
			INSERT INTO documents (doc_id, source_id, source_native_id, run_id, version, content_hash, chunk_count, status)
			VALUES ($1, 's', $1, $1, 1, 'h', $2, $3)`, run, len(statuses), manifest.DocProcessing); err != nil {
			t.Fatal(err)
		}
		for i, st := range statuses {
			if _, err := b.pool.Exec(b.ctx, `
				INSERT INTO ingest_manifest (doc_id, chunk_index, version, content_hash, status, run_id, job)
				VALUES ($1, $2, 1, 'h', $3, $1, '\x7b7d')`, run, i, st); err != nil {
				t.Fatal(err)
			}
		}
	}
	got, err := manifest.ChunksByRun(b.ctx, b.pool, []string{"run-a", "run-b", "run-s", "run-none"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]manifest.RunChunks{
		"run-a": {Pending: 1, Stored: 2, Parked: 1},
		"run-b": {Stored: 1, Parked: 2},
	}
	for _, run := range []string{"run-a", "run-b", "run-s", "run-none", "run-x"} {
		if got[run] != want[run] {
			t.Errorf("%s: %+v, want %+v", run, got[run], want[run])
		}
	}
	if none, err := manifest.ChunksByRun(b.ctx, b.pool, nil); err != nil || len(none) != 0 {
		t.Errorf("no runs: %v, %v; want none", none, err)
	}
}
