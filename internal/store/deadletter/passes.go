package deadletter

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// PassWindow is how far back ReplayPasses looks by default: long enough
// for several replay passes at the replayer's backoff, short enough that
// an old incident does not hide today's drain.
const PassWindow = 24 * time.Hour

// PlateauCarryover is the carryover at and above which the DLQ counts as
// plateaued; the SluiceReplayPlateau alert uses the same bound.
const PlateauCarryover = 0.8

// Pass is one replay generation's failures: how many dead letters failed
// at generation Gen (0, the first failure, counts only those the replayer
// takes), and what share of the generation before failed again here.
type Pass struct {
	Gen    int `json:"replay_gen"`
	Failed int `json:"failed"`
	// CarriedOver is Failed over the previous pass's Failed, 0 for the
	// first pass. A draining DLQ carries less over at each pass; one that
	// carries nearly all over has plateaued: the replays fail again.
	CarriedOver float64 `json:"carried_over"`
}

// ReplayPasses reads, from dead_letter_history, the failures recorded
// since since by replay generation.
func ReplayPasses(ctx context.Context, q interface {
	Query(context.Context, string, ...any) (pgx.Rows, error)
}, since time.Time) ([]Pass, error) {
	rows, err := q.Query(ctx, `
		SELECT replay_gen, count(DISTINCT dead_letter_id) FROM dead_letter_history
		WHERE event = 'failed' AND at >= $1 AND replay_gen IS NOT NULL
		  AND (replay_gen > 0 OR `+ReplayableSQL()+`)
		GROUP BY replay_gen ORDER BY replay_gen`, since)
	if err != nil {
		return nil, fmt.Errorf("replay passes: %w", err)
	}
	var passes []Pass
	var p Pass
	if _, err := pgx.ForEachRow(rows, []any{&p.Gen, &p.Failed}, func() error {
		if n := len(passes); n > 0 && passes[n-1].Failed > 0 {
			p.CarriedOver = float64(p.Failed) / float64(passes[n-1].Failed)
		}
		passes = append(passes, p)
		p = Pass{}
		return nil
	}); err != nil {
		return nil, fmt.Errorf("replay passes: %w", err)
	}
	return passes, nil
}

// Carryover is the last pass's CarriedOver: near 1 when the latest
// replays failed again for nearly everything they took (a plateau), near
// 0 when the DLQ drains; 0 with fewer than two passes.
func Carryover(passes []Pass) float64 {
	if len(passes) < 2 {
		return 0
	}
	return passes[len(passes)-1].CarriedOver
}
