package deadletter

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/sluicehq/sluice/internal/store/manifest"
	"github.com/sluicehq/sluice/pkg/outbox"
)

// ResolutionDeleted is the resolution of a dead letter whose document was
// deleted.
const ResolutionDeleted = "deleted"

// Erased is what Erase removed of one document's dead letters.
type Erased struct {
	// Payloads counts the payloads erased: each dead letter's own copy
	// and each copy kept by reference in dead_letter_payloads.
	Payloads int
	// Resolved counts the open dead letters resolved as deleted.
	Resolved int
}

// Erase erases the payloads of every dead letter of the documents ids,
// in dead_letters, dead_letter_payloads and the outbox, and the kept
// bytes of their parked files (file_bytes), and resolves their open dead
// letters as ResolutionDeleted; counts, classes and history stay. Call
// it in the transaction that records the documents' tombstones.
func Erase(ctx context.Context, q manifest.Querier, ids []string) (map[string]Erased, error) {
	out := make(map[string]Erased, len(ids))
	rows, err := q.Query(ctx, `
		WITH locked AS (
			SELECT dead_letter_id FROM dead_letters WHERE doc_id = ANY($1)
			ORDER BY doc_id, chunk_index FOR UPDATE),
		before AS (
			SELECT d.dead_letter_id, d.payload IS NOT NULL AND length(d.payload) > 0 AS had, d.resolved_at IS NULL AS open
			FROM dead_letters d JOIN locked USING (dead_letter_id))
		UPDATE dead_letters d SET payload = NULL, payload_purged_at = coalesce(d.payload_purged_at, now()),
		       resolution = CASE WHEN d.resolved_at IS NULL THEN $2 ELSE d.resolution END,
		       resolved_at = coalesce(d.resolved_at, now())
		FROM before WHERE d.dead_letter_id = before.dead_letter_id
		RETURNING d.doc_id, before.had, before.open`, ids, ResolutionDeleted)
	if err != nil {
		return nil, fmt.Errorf("erase dead letters: %w", err)
	}
	var id string
	var had, open bool
	if _, err := pgx.ForEachRow(rows, []any{&id, &had, &open}, func() error {
		e := out[id]
		if had {
			e.Payloads++
		}
		if open {
			e.Resolved++
		}
		out[id] = e
		return nil
	}); err != nil {
		return nil, fmt.Errorf("erase dead letters: %w", err)
	}
	// A by-reference copy names its document, or, written before it did,
	// is found through the failures triage recorded of the document.
	rows, err = q.Query(ctx, `
		DELETE FROM dead_letter_payloads p
		WHERE p.doc_id = ANY($1)
		   OR p.outbox_id IN (SELECT h.outbox_id FROM dead_letter_history h JOIN dead_letters d USING (dead_letter_id)
		                      WHERE d.doc_id = ANY($1) AND h.outbox_id IS NOT NULL)
		RETURNING coalesce(p.doc_id, '')`, ids)
	if err != nil {
		return nil, fmt.Errorf("erase dead letter payloads: %w", err)
	}
	if _, err := pgx.ForEachRow(rows, []any{&id}, func() error {
		e := out[id]
		e.Payloads++
		out[id] = e
		return nil
	}); err != nil {
		return nil, fmt.Errorf("erase dead letter payloads: %w", err)
	}
	// Outbox rows written before dead letters travelled without their
	// payload still hold one.
	if _, err := outbox.ErasePayloads(ctx, q, ids); err != nil {
		return nil, fmt.Errorf("erase dead letter payloads: %w", err)
	}
	if err := eraseFileBytes(ctx, q, ids); err != nil {
		return nil, err
	}
	return out, nil
}
