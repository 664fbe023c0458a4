package deadletter

import (
	"context"
	"fmt"

	"github.com/sluicehq/sluice/internal/broker"
	"github.com/sluicehq/sluice/pkg/messages"
	"github.com/sluicehq/sluice/pkg/outbox"
)

// HeaderPayloadInPostgres marks a dead letter published without its
// payload, because with it the message would pass the broker's
// max_payload. The payload is in dead_letter_payloads under the outbox
// row's id (the message id's "dl:<id>"); the DLQ consumers read it from
// there (see dlq.WithPayloads and Payload).
const HeaderPayloadInPostgres = "Sluice-Payload-In-Postgres"

// headerRoom is what a dead letter's headers may take of the broker's
// max_payload.
const headerRoom = 4 << 10

// Write writes dls to the outbox in tx, in one statement, each
// on the DLQ subject for its disposition and source. A dead letter too
// large for the DLQ stream is written without its payload, which is kept
// in PostgreSQL instead: it still reaches triage, the replayer and the
// alerter, whole.
func Write(ctx context.Context, tx outbox.Tx, dls []messages.DeadLetter) error {
	msgs := make([]outbox.Message, len(dls))
	kept := make([][]byte, len(dls))
	for i, dl := range dls {
		payload, err := dl.Encode()
		if err != nil {
			return fmt.Errorf("encode dead letter: %w", err)
		}
		headers := map[string]string{"Sluice-Dead-Letter-Id": dl.DeadLetterID, "Sluice-Error-Class": dl.ErrorClass}
		if len(payload)+headerRoom > broker.MaxPayload {
			kept[i] = dl.Payload
			dl.Payload = nil
			if payload, err = dl.Encode(); err != nil {
				return fmt.Errorf("encode dead letter: %w", err)
			}
			headers[HeaderPayloadInPostgres] = "true"
		}
		msgs[i] = outbox.Message{Subject: messages.DLQSubject(dl.Disposition, dl.SourceID), Headers: headers, Payload: payload}
	}
	ids, err := outbox.WriteAll(ctx, tx, msgs)
	if err != nil {
		return err
	}
	for i, payload := range kept {
		if payload == nil {
			continue
		}
		if _, err := tx.Exec(ctx, `INSERT INTO dead_letter_payloads (outbox_id, payload) VALUES ($1, $2)`, ids[i], payload); err != nil {
			return fmt.Errorf("keep dead letter payload: %w", err)
		}
	}
	return nil
}

// Payload returns the payload kept in dead_letter_payloads for the dead
// letter published from outbox row outboxID, which Write kept there
// because it was too large for the DLQ stream.
func Payload(ctx context.Context, q RowQuerier, outboxID int64) ([]byte, error) {
	var payload []byte
	if err := q.QueryRow(ctx, `SELECT payload FROM dead_letter_payloads WHERE outbox_id = $1`, outboxID).Scan(&payload); err != nil {
		return nil, err
	}
	return payload, nil
}
