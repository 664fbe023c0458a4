package deadletter

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/sluicehq/sluice/internal/store/manifest"
	"github.com/sluicehq/sluice/pkg/messages"
)

// upsertDeadLetter records one failure. The conflict clause is the whole
// idempotency story: only a strictly newer outbox id touches an existing
// row. A chunk the manifest already shows stored at this version or later
// (the replayer can store it before triage sees the dead letter) is
// recorded as resolved at once; any other new failure unresolves the row.
// replayed_at and replay_id belong to the operator's replay bookkeeping and
// are never touched here. A dead letter of a version a delete has erased
// is not recorded: it arrived after the delete (from the DLQ stream, or
// relayed late), and its payload holds the deleted text. The document's
// row is locked for share first, so that a delete committing meanwhile
// either is seen or waits for this statement.
const upsertDeadLetter = `
INSERT INTO dead_letters (
	dead_letter_id, doc_id, chunk_index, version, source_id, source_native_id, run_id,
	disposition, error_class, error_code, error_detail, stage, attempts, replay_gen,
	payload, last_outbox_id, first_failed_at, last_failed_at, next_retry_at, resolved_at)
SELECT
	$1, $2, $3, $4::bigint, $5, $6, NULLIF($7, ''),
	$8, $9, NULLIF($10, ''), $11, $12, $13, $14,
	$15, $16, $17, $17, $18,
	CASE WHEN $4::bigint > 0 AND EXISTS (
		SELECT 1 FROM ingest_manifest m
		WHERE m.doc_id = $2 AND m.chunk_index = $3 AND m.status = ` + manifest.SQLStored + ` AND m.version >= $4::bigint)
	THEN now() END
WHERE NOT EXISTS (
	SELECT 1 FROM (SELECT doc_id FROM documents WHERE doc_id = $2 FOR SHARE) d
	JOIN document_deletions x USING (doc_id) WHERE x.version > $4::bigint)
ON CONFLICT (doc_id, chunk_index) DO UPDATE SET
	version           = EXCLUDED.version,
	source_id         = EXCLUDED.source_id,
	source_native_id  = COALESCE(NULLIF(EXCLUDED.source_native_id, ''), dead_letters.source_native_id),
	run_id            = EXCLUDED.run_id,
	disposition       = EXCLUDED.disposition,
	error_class       = EXCLUDED.error_class,
	error_code        = EXCLUDED.error_code,
	error_detail      = EXCLUDED.error_detail,
	stage             = EXCLUDED.stage,
	attempts          = dead_letters.attempts + EXCLUDED.attempts,
	replay_gen        = EXCLUDED.replay_gen,
	payload           = EXCLUDED.payload,
	payload_purged_at = NULL,
	last_outbox_id    = EXCLUDED.last_outbox_id,
	last_failed_at    = EXCLUDED.last_failed_at,
	next_retry_at     = EXCLUDED.next_retry_at,
	resolved_at       = EXCLUDED.resolved_at
WHERE dead_letters.last_outbox_id < EXCLUDED.last_outbox_id
RETURNING xmax = 0, resolved_at IS NOT NULL`

// RowQuerier runs a statement that returns one row: pgx.Tx, *pgx.Conn
// and *pgxpool.Pool satisfy it.
type RowQuerier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// Outcomes of Record.
const (
	// Inserted is a chunk's first dead letter.
	Inserted = "inserted"
	// Updated is a newer failure of a chunk with a dead letter.
	Updated = "updated"
	// Skipped is a redelivery, or a failure older than the one recorded.
	Skipped = "skipped"
)

// Record records dl, published from outbox row outboxID (0 when
// unknown), in dead_letters, and returns its outcome (Inserted, Updated
// or Skipped) and whether the row is resolved. A nil payload is recorded
// as empty bytes: NULL is reserved for "purged by retention"
// (payload_purged_at says when). Recording a failure twice changes
// nothing.
func Record(ctx context.Context, q RowQuerier, dl messages.DeadLetter, outboxID int64) (outcome string, resolved bool, err error) {
	payload := dl.Payload
	if payload == nil {
		payload = []byte{}
	}
	var inserted bool
	err = q.QueryRow(ctx, upsertDeadLetter,
		dl.DeadLetterID, dl.DocID, dl.ChunkIndex, dl.DocVersion, dl.SourceID, dl.SourceNativeID, dl.RunID,
		dl.Disposition, dl.ErrorClass, dl.ErrorCode, messages.TruncateDetail(dl.ErrorDetail), dl.Stage,
		max(dl.Attempts, 1), dl.ReplayGen, payload, max(outboxID, 0), dl.FailedAt.UTC(), dl.NextRetryAt,
	).Scan(&inserted, &resolved)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return Skipped, false, nil
	case err != nil:
		return "", false, fmt.Errorf("record dead letter %s: %w", dl.DeadLetterID, err)
	case inserted:
		return Inserted, resolved, nil
	}
	return Updated, resolved, nil
}
