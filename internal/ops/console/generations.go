package console

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sluicehq/sluice/internal/store/generation"
)

// generationRow is one index generation on the overview: its registry
// row and its progress against the manifest.
type generationRow struct {
	generation.Generation
	Progress generation.Progress
}

// Backfill says what writes the generation: the pipeline for generation
// 1; for a later one its backfill's pass, the chunks queued to publish,
// the rate of the last generation.ETAWindow, a recut generation's
// documents not cut yet and, while chunks are owed, the time to finish
// at that rate, as sluice index status says them.
func (r generationRow) Backfill() string {
	p := r.Progress
	st := p.State
	if st == nil {
		return p.Backfill
	}
	s := fmt.Sprintf("pass %d", st.Pass)
	if st.Scanned {
		s += " scanned"
	}
	s += fmt.Sprintf(" · %d queued · %s/s", st.Queued, rate(p.RecentPerSecond))
	if p.Uncut > 0 {
		s += fmt.Sprintf(" · %d documents not cut yet (run their sources)", p.Uncut)
	}
	switch {
	case p.Owed == 0:
	case p.ETASeconds != nil:
		s += " · about " + time.Duration(*p.ETASeconds*float64(time.Second)).Round(time.Second).String() + " left"
	default:
		s += " · nothing written in the last " + generation.ETAWindow.String()
	}
	return s
}

// RetryHint is the command that embeds a later generation's parked chunks
// again, empty when it has none that the command retries: it counts
// Progress.ParkedHere, generation.Retryable's count, which is what
// sluice index retry reports. Chunks parked in the manifest are sluice
// dlq replay's.
func (r generationRow) RetryHint() string {
	if r.ID == generation.First || r.Status == generation.Dropped || r.Progress.ParkedHere == 0 {
		return ""
	}
	return fmt.Sprintf("sluice index retry %d --reason R --execute", r.ID)
}

// rate prints chunks per second with the precision its size needs: a
// slow backfill's rate is not 0.0.
func rate(perSecond float64) string {
	switch {
	case perSecond == 0:
		return "0"
	case perSecond >= 10:
		return fmt.Sprintf("%.0f", perSecond)
	case perSecond >= 1:
		return fmt.Sprintf("%.1f", perSecond)
	}
	return fmt.Sprintf("%.2g", perSecond)
}

// readGenerations measures every generation that is not dropped (a
// dropped one has nothing left to measure), oldest first, as `sluice
// index status` does.
func readGenerations(ctx context.Context, pool *pgxpool.Pool) ([]generationRow, error) {
	gs, err := generation.List(ctx, pool)
	if err != nil {
		return nil, err
	}
	var out []generationRow
	for _, g := range gs {
		if g.Status == generation.Dropped {
			continue
		}
		p, err := generation.ProgressOf(ctx, pool, g)
		if err != nil {
			return nil, fmt.Errorf("index generations: %w", err)
		}
		out = append(out, generationRow{Generation: g, Progress: p})
	}
	return out, nil
}
