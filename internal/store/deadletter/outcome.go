package deadletter

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// Outcome is what became of the dead letters one operator replay
// dispatched, as their history tells: how many were stored by it, and
// how many failed again. A mark the replay took back (unmarked, as a
// failed dispatch is) counts in neither.
type Outcome struct {
	Stored, ParkedAgain int
}

// ReplayOutcomes returns the Outcome of each replay of replayIDs that
// dispatched anything; a replay absent from the map has none yet.
func ReplayOutcomes(ctx context.Context, q Reader, replayIDs []string) (map[string]Outcome, error) {
	out := make(map[string]Outcome, len(replayIDs))
	if len(replayIDs) == 0 {
		return out, nil
	}
	rows, err := q.Query(ctx, `
		SELECT r.replay_id,
		       count(*) FILTER (WHERE x.resolved AND NOT x.failed),
		       count(*) FILTER (WHERE x.failed)
		FROM dead_letter_history r
		CROSS JOIN LATERAL (SELECT
		    EXISTS (SELECT 1 FROM dead_letter_history s
		            WHERE s.dead_letter_id = r.dead_letter_id AND s.id > r.id
		              AND s.event = 'resolved' AND s.replay_id = r.replay_id) AS resolved,
		    EXISTS (SELECT 1 FROM dead_letter_history f
		            WHERE f.dead_letter_id = r.dead_letter_id AND f.id > r.id
		              AND f.event = 'failed' AND f.replay_gen = r.replay_gen) AS failed) x
		WHERE r.replay_id = ANY($1) AND r.event = 'replayed'
		  AND NOT EXISTS (SELECT 1 FROM dead_letter_history u
		                  WHERE u.dead_letter_id = r.dead_letter_id AND u.id > r.id
		                    AND u.event = 'unmarked' AND u.replay_id = r.replay_id)
		GROUP BY r.replay_id`, replayIDs)
	if err != nil {
		return nil, fmt.Errorf("replay outcomes: %w", err)
	}
	var id string
	var o Outcome
	if _, err := pgx.ForEachRow(rows, []any{&id, &o.Stored, &o.ParkedAgain}, func() error {
		out[id] = o
		return nil
	}); err != nil {
		return nil, fmt.Errorf("replay outcomes: %w", err)
	}
	return out, nil
}
