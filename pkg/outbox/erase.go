package outbox

import (
	"context"
	"fmt"
)

// ErasePayloads blanks the dead-letter payload ("payload": "") of every
// outbox row whose dead letter is of one of the documents docIDs,
// published or not, and returns how many rows held one. Rows written
// since dead letters travel without their payload hold none; older
// rows do, and a delete erases them. An unpublished row is still
// published, its payload blank; a message already published from a row
// is beyond reach. It runs the schema's erase_outbox_payloads, as the
// owner, so that the caller needs no right to read outbox payloads.
func ErasePayloads(ctx context.Context, tx Tx, docIDs []string) (int64, error) {
	rows, err := tx.Query(ctx, `SELECT erase_outbox_payloads($1)`, docIDs)
	if err != nil {
		return 0, fmt.Errorf("outbox: erase payloads: %w", err)
	}
	defer rows.Close()
	var n int64
	for rows.Next() {
		if err := rows.Scan(&n); err != nil {
			return 0, fmt.Errorf("outbox: erase payloads: %w", err)
		}
	}
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("outbox: erase payloads: %w", err)
	}
	return n, nil
}
