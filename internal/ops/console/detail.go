package console

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sluicehq/sluice/pkg/messages"
)

// errNotFound is returned for an unknown dead letter or run.
var errNotFound = errors.New("not found")

// previewBytes is how much of an undecodable payload an operator sees.
const previewBytes = 200

// letter is one dead letter with everything triage needs.
type letter struct {
	listItem
	Version                                 int64
	ErrorCode, ReplayID                     *string
	FirstFailedAt                           time.Time
	ReplayedAt, ResolvedAt, PayloadPurgedAt *time.Time
	LastOutboxID                            int64
	History                                 []event
	Payload                                 *payload
	Escalated                               bool
	payloadRaw                              []byte
}

// event is one row of a dead letter's history.
type event struct {
	At                                     time.Time
	Event                                  string
	Disposition, ErrorClass, Detail, Stage *string
	Attempts, ReplayGen                    *int
	ReplayID                               *string
}

// payload is what the page shows of a payload. Text is set only when an
// operator asked for it and the dead letter is not an escalation.
type payload struct {
	Bytes       int
	Job         *messages.ChunkJob
	DecodeError string
	TextBytes   int
	Text        *string
	Preview     string
	PreviewHex  bool
}

func readLetter(ctx context.Context, pool *pgxpool.Pool, id string) (*letter, error) {
	var l letter
	err := pool.QueryRow(ctx, `
		SELECT d.dead_letter_id, d.doc_id, d.source_id, d.source_native_id, d.disposition, d.error_class, d.stage,
		       d.run_id, d.error_detail, d.chunk_index, d.attempts, d.replay_gen, d.last_failed_at, d.next_retry_at, `+stateSQL+`,
		       d.version, d.error_code, d.replay_id, d.first_failed_at, d.replayed_at, d.resolved_at, d.payload_purged_at,
		       d.last_outbox_id, d.payload
		FROM dead_letters d WHERE d.dead_letter_id = $1`, id).Scan(
		&l.ID, &l.DocID, &l.Source, &l.NativeID, &l.Disposition, &l.ErrorClass, &l.Stage,
		&l.RunID, &l.ErrorDetail, &l.ChunkIndex, &l.Attempts, &l.ReplayGen, &l.LastFailedAt, &l.NextRetryAt, &l.State,
		&l.Version, &l.ErrorCode, &l.ReplayID, &l.FirstFailedAt, &l.ReplayedAt, &l.ResolvedAt, &l.PayloadPurgedAt,
		&l.LastOutboxID, &l.payloadRaw)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, errNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("read dead letter: %w", err)
	}
	l.Escalated = l.Disposition == messages.DispositionEscalate
	rows, err := pool.Query(ctx, `
		SELECT at, event, disposition, error_class, error_detail, stage, attempts, replay_gen, replay_id
		FROM dead_letter_history WHERE dead_letter_id = $1 ORDER BY id DESC LIMIT 200`, id)
	if err != nil {
		return nil, fmt.Errorf("dead letter history: %w", err)
	}
	if l.History, err = pgx.CollectRows(rows, pgx.RowToStructByPos[event]); err != nil {
		return nil, fmt.Errorf("dead letter history: %w", err)
	}
	return &l, nil
}

// view interprets the payload. The chunk text is kept only when withText
// and the dead letter is not an escalation: an escalation's text is what a
// compliance rule matched, and it never leaves the database. Unless
// operator, the job's metadata and the error details (a provider's error
// can echo the request) are dropped too.
func (l *letter) view(withText, operator bool) {
	if !operator {
		l.ErrorDetail = nil
		for i := range l.History {
			l.History[i].Detail = nil
		}
	}
	if l.payloadRaw == nil {
		return
	}
	withText = withText && !l.Escalated
	p := &payload{Bytes: len(l.payloadRaw)}
	job, err := messages.DecodeChunkJob(l.payloadRaw)
	switch {
	case err != nil:
		if !l.Escalated && operator {
			p.DecodeError = err.Error()
		}
		if withText {
			raw := l.payloadRaw[:min(len(l.payloadRaw), previewBytes)]
			if utf8.Valid(raw) {
				p.Preview = string(raw)
			} else {
				p.Preview, p.PreviewHex = hex.EncodeToString(raw), true
			}
		}
	default:
		p.TextBytes = len(job.Text)
		if withText {
			text := job.Text
			p.Text = &text
		}
		job.Text = ""
		if l.Escalated || !operator {
			job.Metadata = nil // metadata may quote what the rule matched, or the document
		}
		p.Job = &job
	}
	l.payloadRaw = nil
	l.Payload = p
}
