package deadletter

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// ErrNotFound is returned for a dead letter id that names none.
var ErrNotFound = errors.New("dead letter not found")

// Letter is every column of one dead letter, and its State. Times are
// UTC.
type Letter struct {
	Summary
	Version, LastOutboxID int64
	ReplayID              *string
	PayloadPurgedAt       *time.Time
	// RawPayload is the chunk job as it failed; nil once retention purged
	// it. It may hold sensitive text: show it only on request.
	RawPayload []byte
}

// Get reads the dead letter id; ErrNotFound when there is none.
func Get(ctx context.Context, q Reader, id string) (*Letter, error) {
	var l Letter
	err := q.QueryRow(ctx, `
		SELECT `+summaryColumns+`, d.version, d.last_outbox_id, d.replay_id, d.payload_purged_at, d.payload
		FROM dead_letters d WHERE d.dead_letter_id = $1`, id).
		Scan(append(l.fields(), &l.Version, &l.LastOutboxID, &l.ReplayID, &l.PayloadPurgedAt, &l.RawPayload)...)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("read dead letter %s: %w", id, err)
	}
	l.utc()
	l.PayloadPurgedAt = utcPtr(l.PayloadPurgedAt)
	return &l, nil
}

// Event is one row of a dead letter's history.
type Event struct {
	At                                     time.Time
	Event                                  string
	Disposition, ErrorClass, Detail, Stage *string
	Attempts, ReplayGen                    *int
	ReplayID                               *string
}

// History returns the newest limit events of dead letter id, newest
// first.
func History(ctx context.Context, q Reader, id string, limit int) ([]Event, error) {
	rows, err := q.Query(ctx, `
		SELECT at, event, disposition, error_class, error_detail, stage, attempts, replay_gen, replay_id
		FROM dead_letter_history WHERE dead_letter_id = $1 ORDER BY id DESC LIMIT $2`, id, limit)
	if err != nil {
		return nil, fmt.Errorf("dead letter history: %w", err)
	}
	events, err := pgx.CollectRows(rows, pgx.RowToStructByPos[Event])
	if err != nil {
		return nil, fmt.Errorf("dead letter history: %w", err)
	}
	return events, nil
}
