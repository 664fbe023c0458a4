package bulk

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/sluicehq/sluice/internal/batchapi"
)

// Canceller cancels a source's bulk load: what the provider does not have
// yet never goes, and what it has is cancelled there. It needs only to
// read the ledger and update a batch's state and cancel columns
// (sluice_operator).
type Canceller struct {
	q      Querier
	client *batchapi.Client
	deps   Deps
}

// NewCanceller returns a canceller of the batches in q's ledger.
func NewCanceller(q Querier, client *batchapi.Client, deps Deps) *Canceller {
	deps.applyDefaults()
	return &Canceller{q: q, client: client, deps: deps}
}

// Cancel cancels every unfinished batch of source and returns how many
// provider batches it asked the provider to cancel. Batches the provider
// does not have become cancelled at once; the others are marked, so that
// a builder never creates them and a poller cancels any it finds running.
// Their members without a result are handed back as owed work when the
// poller settles the batches.
func (c *Canceller) Cancel(ctx context.Context, source string) (int, error) {
	now := c.deps.Now()
	rows, err := c.q.Query(ctx, `
		WITH unsent AS (
			SELECT batch_id, (state IN ('open', 'sealed') OR (state = 'uploaded' AND create_requested_at IS NULL)) AS unsent
			FROM bulk_batches
			WHERE source_id = $1 AND state IN ('open', 'sealed', 'uploaded', 'created', 'validating', 'in_progress', 'finalizing', 'cancelling')
		)
		UPDATE bulk_batches b SET cancel_requested_at = coalesce(b.cancel_requested_at, $2),
		       state = CASE WHEN u.unsent THEN 'cancelled' ELSE b.state END,
		       finished_at = CASE WHEN u.unsent THEN $2 ELSE b.finished_at END,
		       updated_at = $2
		FROM unsent u WHERE b.batch_id = u.batch_id
		RETURNING b.batch_id, b.state, coalesce(b.provider_batch_id, '')`, source, now)
	if err != nil {
		return 0, fmt.Errorf("bulk: cancel %s: %w", source, err)
	}
	type marked struct {
		ID       int64
		State    State
		Provider string
	}
	batches, err := pgx.CollectRows(rows, pgx.RowToStructByPos[marked])
	if err != nil {
		return 0, fmt.Errorf("bulk: cancel %s: %w", source, err)
	}
	var n int
	var errs []error
	for _, b := range batches {
		if b.Provider == "" || !b.State.atProvider() {
			continue
		}
		c.deps.Metrics.request(opCancel)
		_, err := c.client.CancelBatch(ctx, b.Provider)
		var api *batchapi.APIError
		switch {
		case err == nil:
			n++
		case errors.Is(err, batchapi.ErrNotFound), errors.As(err, &api) && api.Status.StatusCode == 400:
			// Lost or already final: the poller settles it.
		default:
			errs = append(errs, fmt.Errorf("cancel provider batch %s: %w", b.Provider, err))
		}
	}
	c.deps.Log.Info().Str("source", source).Int("batches", len(batches)).Int("provider_cancelled", n).Msg("bulk load cancelled")
	return n, errors.Join(errs...)
}
