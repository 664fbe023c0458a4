package deadletter

import (
	"context"
	"fmt"

	"github.com/sluicehq/sluice/internal/store/manifest"
	"github.com/sluicehq/sluice/pkg/messages"
)

// ReplayJob rebuilds the job a dead letter carries as the next replay
// generation: the original payload, with replay_gen + 1, the dead letter's
// id and, for operator replays, the replay id.
func ReplayJob(dl messages.DeadLetter, replayID string) ([]byte, error) {
	job, err := messages.DecodeChunkJob(dl.Payload)
	if err != nil {
		return nil, fmt.Errorf("dead letter %s: payload is not a chunk job: %w", dl.DeadLetterID, err)
	}
	next := NextGeneration(job, dl, replayID)
	return next.Encode()
}

// NextGeneration returns job, the chunk dead letter dl carries (as it is
// or corrected), as the next replay generation: replay_gen + 1, the dead
// letter's id and, for operator replays, the replay id.
func NextGeneration(job messages.ChunkJob, dl messages.DeadLetter, replayID string) messages.ChunkJob {
	job.ReplayGen = dl.ReplayGen + 1
	job.DeadLetterID = dl.DeadLetterID
	job.ReplayID = replayID
	return job
}

// MarkReplayed marks the dead letters ids replayed by operator replay
// replayID, before anything is dispatched.
func MarkReplayed(ctx context.Context, q manifest.Querier, replayID string, ids []string) error {
	_, err := q.Exec(ctx, `UPDATE dead_letters SET replayed_at = now(), replay_id = $1 WHERE dead_letter_id = ANY($2)`, replayID, ids)
	return err
}

// UnmarkReplayed clears replay replayID's mark from the dead letters ids,
// so that a later replay takes them. It runs even when ctx is cancelled.
func UnmarkReplayed(ctx context.Context, q manifest.Querier, replayID string, ids []string) error {
	_, err := q.Exec(context.WithoutCancel(ctx),
		`UPDATE dead_letters SET replayed_at = NULL, replay_id = NULL WHERE replay_id = $1 AND dead_letter_id = ANY($2)`, replayID, ids)
	return err
}
