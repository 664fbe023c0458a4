package console

import (
	"context"
	"encoding/hex"
	"errors"
	"unicode/utf8"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sluicehq/sluice/internal/store/deadletter"
	"github.com/sluicehq/sluice/pkg/messages"
)

// errNotFound is returned for an unknown dead letter or run.
var errNotFound = errors.New("not found")

// previewBytes is how much of an undecodable payload an operator sees.
const previewBytes = 200

// letter is one dead letter with everything triage needs. Its
// RawPayload is dropped by view, once interpreted.
type letter struct {
	deadletter.Letter
	History   []deadletter.Event
	Payload   *payload
	Escalated bool
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
	dl, err := deadletter.Get(ctx, pool, id)
	if errors.Is(err, deadletter.ErrNotFound) {
		return nil, errNotFound
	}
	if err != nil {
		return nil, err
	}
	l := &letter{Letter: *dl, Escalated: dl.Disposition == messages.DispositionEscalate}
	if l.History, err = deadletter.History(ctx, pool, id, historyShown); err != nil {
		return nil, err
	}
	return l, nil
}

// historyShown is how many of a dead letter's newest events its page
// shows.
const historyShown = 200

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
	if l.RawPayload == nil {
		return
	}
	withText = withText && !l.Escalated
	p := &payload{Bytes: len(l.RawPayload)}
	job, err := messages.DecodeChunkJob(l.RawPayload)
	switch {
	case err != nil:
		if !l.Escalated && operator {
			p.DecodeError = err.Error()
		}
		if withText {
			raw := l.RawPayload[:min(len(l.RawPayload), previewBytes)]
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
	l.RawPayload = nil
	l.Payload = p
}
