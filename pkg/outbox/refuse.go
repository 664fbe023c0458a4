package outbox

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/rs/zerolog"
)

// refuse records that rw is not published: the row stays in the outbox,
// unpublished, and is flagged (refused_at) so that no relay claims it
// again and an operator can look at it.
func (o *outcome) refuse(rw *claimed, log zerolog.Logger) {
	log.Error().Int64("outbox_id", rw.id).Err(rw.refused).
		Msg("outbox row refused: not a well-formed dead letter on its own DLQ subject; left unpublished and flagged")
	o.refused, o.refusals = append(o.refused, rw.id), append(o.refusals, rw.refused.Error())
}

// markRefused flags o's refused rows in the claiming transaction.
func markRefused(ctx context.Context, tx pgx.Tx, o outcome) error {
	if len(o.refused) == 0 {
		return nil
	}
	if _, err := tx.Exec(ctx, `
		UPDATE outbox o SET refused_at = now(), last_error = left('refused: ' || t.err, 500)
		FROM unnest($1::int8[], $2::text[]) AS t(id, err) WHERE o.id = t.id`, o.refused, o.refusals); err != nil {
		return fmt.Errorf("mark refused: %w", err)
	}
	return nil
}
