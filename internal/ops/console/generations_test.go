package console

import (
	"testing"

	"github.com/sluicehq/sluice/internal/store/generation"
)

// The overview's backfill cell says what a sluice index status reader
// needs: who writes the generation, and for a later one how far its
// backfill is and how long it has to go.
func TestGenerationRowBackfill(t *testing.T) {
	t.Parallel()
	eta := 90.4
	later := func(owed int64, perSecond float64, eta *float64) generationRow {
		return generationRow{
			Generation: generation.Generation{ID: 2, Status: generation.Building},
			Progress: generation.Progress{Owed: owed, Backfill: generation.BackfillRunning, RecentPerSecond: perSecond, ETASeconds: eta,
				State: &generation.BackfillState{Pass: 1, Queued: 40}},
		}
	}
	for _, c := range []struct {
		name string
		row  generationRow
		want string
	}{
		{"generation 1", generationRow{Generation: generation.Generation{ID: 1}, Progress: generation.Progress{Backfill: generation.BackfillPipeline}}, generation.BackfillPipeline},
		{"running", later(120, 1.33, &eta), "pass 1 · 40 queued · 1.3/s · about 1m30s left"},
		{"fast", later(120, 250.2, &eta), "pass 1 · 40 queued · 250/s · about 1m30s left"},
		{"stalled", later(120, 0, nil), "pass 1 · 40 queued · 0/s · nothing written in the last 5m0s"},
		{"caught up", later(0, 0.5, nil), "pass 1 · 40 queued · 0.5/s"},
	} {
		if got := c.row.Backfill(); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}
