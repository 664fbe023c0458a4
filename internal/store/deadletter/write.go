package deadletter

import (
	"context"
	"fmt"

	"github.com/sluicehq/sluice/internal/store/manifest"
	"github.com/sluicehq/sluice/pkg/messages"
	"github.com/sluicehq/sluice/pkg/outbox"
)

// HeaderPayloadInPostgres marks a dead letter published without its
// payload. Every dead letter is: its payload (the job, with the chunk's
// text) is in dead_letter_payloads under the outbox row's id (the
// message id's "dl:<id>"), and the DLQ consumers read it from there (see
// dlq.WithPayloads and Payload). The DLQ stream keeps messages for 90
// days and cannot drop one document's messages (its subjects name a
// disposition and a source, not a document), so a delete could not
// reach text kept there; in PostgreSQL it erases it with the rest.
const HeaderPayloadInPostgres = "Sluice-Payload-In-Postgres"

// Write writes dls to the outbox in tx, in one statement, each on the
// DLQ subject for its disposition and source, without its payload, which
// is kept in dead_letter_payloads under the document's id instead: it
// still reaches triage, the replayer and the alerter, whole, and a delete
// of the document erases it (Erase). A dead letter of a deleted document
// is not written at all: Write locks the documents (manifest.Deleted), so
// a delete either committed before and is seen, or waits for tx. Callers
// that write other rows of the documents take that lock first, in the
// order every transaction takes it: documents before manifest rows.
func Write(ctx context.Context, tx outbox.Tx, dls []messages.DeadLetter) error {
	dls, err := leaveOutDeleted(ctx, tx, dls)
	if err != nil || len(dls) == 0 {
		return err
	}
	msgs := make([]outbox.Message, len(dls))
	kept := make([][]byte, len(dls))
	for i, dl := range dls {
		kept[i] = dl.Payload
		dl.Payload = nil
		payload, err := dl.Encode()
		if err != nil {
			return fmt.Errorf("encode dead letter: %w", err)
		}
		headers := map[string]string{"Sluice-Dead-Letter-Id": dl.DeadLetterID, "Sluice-Error-Class": dl.ErrorClass,
			HeaderPayloadInPostgres: "true"}
		msgs[i] = outbox.Message{Subject: messages.DLQSubject(dl.Disposition, dl.SourceID), Headers: headers, Payload: payload}
	}
	ids, err := outbox.WriteAll(ctx, tx, msgs)
	if err != nil {
		return err
	}
	docs := make([]string, len(dls))
	for i, dl := range dls {
		docs[i] = dl.DocID
		if kept[i] == nil {
			kept[i] = []byte{}
		}
	}
	if _, err := tx.Exec(ctx, `
		INSERT INTO dead_letter_payloads (outbox_id, doc_id, payload)
		SELECT * FROM unnest($1::int8[], $2::text[], $3::bytea[])`, ids, docs, kept); err != nil {
		return fmt.Errorf("keep dead letter payloads: %w", err)
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

// leaveOutDeleted returns dls without the dead letters of deleted
// documents, locking the documents named.
func leaveOutDeleted(ctx context.Context, tx manifest.Querier, dls []messages.DeadLetter) ([]messages.DeadLetter, error) {
	var docs []string
	for _, dl := range dls {
		if dl.DocID != "" {
			docs = append(docs, dl.DocID)
		}
	}
	if len(docs) == 0 {
		return dls, nil
	}
	deleted, err := manifest.Deleted(ctx, tx, docs)
	if err != nil || len(deleted) == 0 {
		return dls, err
	}
	kept := dls[:0:0]
	for _, dl := range dls {
		if !deleted[dl.DocID] {
			kept = append(kept, dl)
		}
	}
	return kept, nil
}
