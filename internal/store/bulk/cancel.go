package bulk

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/sluicehq/sluice/internal/provider/batchapi"
)

// Canceller cancels a source's bulk load: what the provider does not have
// yet never goes, and what it has is cancelled there, at once with a
// client or by the poller's next pass without one. It needs only to read
// the ledger and update a batch's state and cancel columns
// (sluice_operator).
type Canceller struct {
	q      Querier
	client *batchapi.Client
	deps   Deps
}

// NewCanceller returns a canceller of the batches in q's ledger. With a
// nil client it only marks the ledger, for a process that has no
// provider settings (the CLI): a poller cancels the marked batches at the
// provider on its next pass.
func NewCanceller(q Querier, client *batchapi.Client, deps Deps) *Canceller {
	deps.applyDefaults()
	return &Canceller{q: q, client: client, deps: deps}
}

// Cancellation counts what Cancel did with a source's unfinished batches.
type Cancellation struct {
	// Cancelled never reached the provider, and are cancelled in the
	// ledger.
	Cancelled int
	// AtProvider were cancelled at the provider, which accepted.
	AtProvider int
	// Marked are left for the poller to cancel or settle: the provider
	// has them (or may), and no client was given, or the provider no
	// longer knows them, or asking it failed (Cancel's error says how).
	Marked int
}

// Cancel cancels every unfinished batch of source. Batches the provider
// does not have become cancelled at once; the others are marked, so that
// a builder never creates them and a poller cancels any it finds running,
// and with a client the provider is asked to cancel them now. Their
// members without a result are handed back as owed work when the poller
// settles the batches.
func (c *Canceller) Cancel(ctx context.Context, source string) (Cancellation, error) {
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
		RETURNING b.batch_id, u.unsent, b.state, coalesce(b.provider_batch_id, '')`, source, now)
	if err != nil {
		return Cancellation{}, fmt.Errorf("bulk: cancel %s: %w", source, err)
	}
	type marked struct {
		ID       int64
		Unsent   bool
		State    State
		Provider string
	}
	batches, err := pgx.CollectRows(rows, pgx.RowToStructByPos[marked])
	if err != nil {
		return Cancellation{}, fmt.Errorf("bulk: cancel %s: %w", source, err)
	}
	var done Cancellation
	var errs []error
	for _, b := range batches {
		switch {
		case b.Unsent:
			done.Cancelled++
		case c.client == nil || b.Provider == "" || !atProvider(b.State):
			done.Marked++
		default:
			accepted, err := c.cancelAtProvider(ctx, b.Provider)
			if accepted {
				done.AtProvider++
			} else {
				done.Marked++
			}
			if err != nil {
				errs = append(errs, err)
			}
		}
	}
	c.deps.Log.Info().Str("source", source).Int("cancelled", done.Cancelled).Int("provider_cancelled", done.AtProvider).
		Int("marked", done.Marked).Msg("bulk load cancelled")
	return done, errors.Join(errs...)
}

// cancelAtProvider asks the provider to cancel batch id and reports
// whether it accepted. A batch it no longer knows or that is already
// final is no error: the poller settles it.
func (c *Canceller) cancelAtProvider(ctx context.Context, id string) (bool, error) {
	c.deps.Metrics.request(opCancel)
	_, err := c.client.CancelBatch(ctx, id)
	var api *batchapi.APIError
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, batchapi.ErrNotFound), errors.As(err, &api) && api.Status.StatusCode == 400:
		return false, nil
	}
	return false, fmt.Errorf("cancel provider batch %s: %w", id, err)
}
