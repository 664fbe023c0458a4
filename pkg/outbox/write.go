package outbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// NotifyChannel is the LISTEN/NOTIFY channel Write signals on commit. It
// is a hint only: relays also poll.
const NotifyChannel = "sluice_outbox"

// Message is one row to publish.
type Message struct {
	// Subject is the JetStream subject, e.g. dlq.quarantine.<source>.
	Subject string
	// Headers are added to the published message.
	Headers map[string]string
	// Payload is the message body; it must be a JSON document.
	Payload []byte
}

// Tx is the part of a pgx transaction Write and WriteAll need. Taking a transaction,
// not a pool, is the point: the row commits or rolls back with the
// caller's other writes.
type Tx interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

var _ Tx = pgx.Tx(nil)

// Write inserts msg in tx and returns the row id; the message id the relay
// publishes under is "dl:<id>".
func Write(ctx context.Context, tx Tx, msg Message) (int64, error) {
	ids, err := WriteAll(ctx, tx, []Message{msg})
	if err != nil {
		return 0, err
	}
	return ids[0], nil
}

// WriteAll inserts msgs in tx, in order, with one statement and one
// notification, and returns their row ids in the same order. A bad
// message fails the call before anything is written.
func WriteAll(ctx context.Context, tx Tx, msgs []Message) ([]int64, error) {
	if len(msgs) == 0 {
		return nil, nil
	}
	subjects, headers, payloads := make([]string, len(msgs)), make([]string, len(msgs)), make([]string, len(msgs))
	for i, msg := range msgs {
		if msg.Subject == "" {
			return nil, errors.New("outbox: empty subject")
		}
		if !json.Valid(msg.Payload) {
			return nil, errors.New("outbox: payload is not valid JSON")
		}
		h := []byte("{}")
		if len(msg.Headers) > 0 {
			var err error
			if h, err = json.Marshal(msg.Headers); err != nil {
				return nil, fmt.Errorf("outbox headers: %w", err)
			}
		}
		subjects[i], headers[i], payloads[i] = msg.Subject, string(h), string(msg.Payload)
	}
	rows, err := tx.Query(ctx, `
		INSERT INTO outbox (subject, headers, payload)
		SELECT subject, headers, payload
		FROM unnest($1::text[], $2::jsonb[], $3::jsonb[]) WITH ORDINALITY AS t(subject, headers, payload, ord)
		ORDER BY ord
		RETURNING id`, subjects, headers, payloads)
	if err != nil {
		return nil, fmt.Errorf("outbox write: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, fmt.Errorf("outbox write: %w", err)
	}
	// Identity values are drawn as rows are inserted, and the rows go in
	// in ord order: the ids in ascending order are the messages' ids.
	slices.Sort(ids)
	if _, err := tx.Exec(ctx, `SELECT pg_notify($1, '')`, NotifyChannel); err != nil {
		return nil, fmt.Errorf("outbox notify: %w", err)
	}
	return ids, nil
}
