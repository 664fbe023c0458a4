package console

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sluicehq/sluice/internal/generation"
)

// generationRow is one index generation on the overview: its registry
// row and its progress against the manifest.
type generationRow struct {
	generation.Generation
	Progress generation.Progress
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
