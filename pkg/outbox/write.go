package outbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

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

// Tx is the part of a pgx transaction Write needs. Taking a transaction,
// not a pool, is the point: the row commits or rolls back with the
// caller's other writes.
type Tx interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

var _ Tx = pgx.Tx(nil)

// Write inserts msg in tx and returns the row id; the message id the relay
// publishes under is "dl:<id>".
func Write(ctx context.Context, tx Tx, msg Message) (int64, error) {
	if msg.Subject == "" {
		return 0, errors.New("outbox: empty subject")
	}
	if !json.Valid(msg.Payload) {
		return 0, errors.New("outbox: payload is not valid JSON")
	}
	headers := msg.Headers
	if headers == nil {
		headers = map[string]string{}
	}
	var id int64
	err := tx.QueryRow(ctx,
		`INSERT INTO outbox (subject, headers, payload) VALUES ($1, $2, $3::jsonb) RETURNING id`,
		msg.Subject, headers, string(msg.Payload)).Scan(&id)
	if err != nil {
		return 0, fmt.Errorf("outbox write: %w", err)
	}
	if _, err := tx.Exec(ctx, `SELECT pg_notify($1, '')`, NotifyChannel); err != nil {
		return 0, fmt.Errorf("outbox notify: %w", err)
	}
	return id, nil
}
