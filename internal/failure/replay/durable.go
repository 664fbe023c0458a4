package replay

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/sluicehq/sluice/internal/platform/broker"
)

// replayDurables are the durables that carry replays: operator replays
// on INGEST's "replay", automatic ones on the DLQ's "replayer".
var replayDurables = []struct{ stream, name string }{
	{broker.IngestStream, broker.ReplayConsumer},
	{broker.DLQStream, broker.ReplayerConsumer},
}

// Pause pauses operator and automatic replays alike, the INGEST "replay"
// and DLQ "replayer" durables, until until; live ingestion ("workers")
// and triage are untouched. A zero until means a hundred years: until
// resumed.
func Pause(ctx context.Context, js jetstream.JetStream, until time.Time) (time.Time, error) {
	if until.IsZero() {
		until = time.Now().AddDate(100, 0, 0)
	}
	for _, d := range replayDurables {
		if _, err := js.PauseConsumer(ctx, d.stream, d.name, until); err != nil {
			return time.Time{}, fmt.Errorf("pause %s durable: %w", d.name, err)
		}
	}
	return until, nil
}

// Resume resumes both replay durables.
func Resume(ctx context.Context, js jetstream.JetStream) error {
	for _, d := range replayDurables {
		if _, err := js.ResumeConsumer(ctx, d.stream, d.name); err != nil {
			return fmt.Errorf("resume %s durable: %w", d.name, err)
		}
	}
	return nil
}

// DurableState is what the replay durable is doing.
type DurableState struct {
	// Exists is false before the topology was created.
	Exists bool
	// Paused and PauseUntil report a pause in force.
	Paused     bool
	PauseUntil time.Time
	// Pending counts replay jobs not yet delivered.
	Pending uint64
	// AckPending counts replay jobs delivered and not yet settled.
	AckPending int
}

// State reads the replay durable's state.
func State(ctx context.Context, js jetstream.JetStream) (DurableState, error) {
	c, err := js.Consumer(ctx, broker.IngestStream, broker.ReplayConsumer)
	if errors.Is(err, jetstream.ErrConsumerNotFound) || errors.Is(err, jetstream.ErrStreamNotFound) {
		return DurableState{}, nil
	}
	if err != nil {
		return DurableState{}, fmt.Errorf("replay durable: %w", err)
	}
	info, err := c.Info(ctx)
	if err != nil {
		return DurableState{}, fmt.Errorf("replay durable: %w", err)
	}
	st := DurableState{Exists: true, Paused: info.Paused, Pending: info.NumPending, AckPending: info.NumAckPending}
	if info.Config.PauseUntil != nil && info.Paused {
		st.PauseUntil = info.Config.PauseUntil.UTC()
	}
	return st, nil
}

// Toggle is one audited pause or resume of the replay durables, as the
// CLI and the console both ask for it.
type Toggle struct {
	// Pause pauses when true and resumes when false.
	Pause bool
	// Until bounds a pause; zero means until resumed.
	Until time.Time
	// By names who asked, Reason why; Reason is required.
	By, Reason string
}

// Apply checks that t has a reason, pauses or resumes the replay
// durables, and records the change in replay_audit. It returns the end
// of a pause in force. The reason is checked before anything changes,
// so an unaudited toggle never happens; a durable changed whose audit
// row could not be written is reported as an error naming both.
func (t Toggle) Apply(ctx context.Context, pool *pgxpool.Pool, js jetstream.JetStream) (time.Time, error) {
	action := ActionResume
	if t.Pause {
		action = ActionPause
	}
	if t.Reason == "" {
		return time.Time{}, fmt.Errorf("%w: %s needs a reason, for the audit trail", ErrScope, action)
	}
	detail := map[string]any{}
	var until time.Time
	var err error
	if t.Pause {
		until, err = Pause(ctx, js, t.Until)
		detail["until"] = until.UTC()
	} else {
		err = Resume(ctx, js)
	}
	if err != nil {
		return time.Time{}, err
	}
	if _, err := recordAction(ctx, pool, action, t.By, t.Reason, detail); err != nil {
		return until, fmt.Errorf("the replay durables changed but the audit row was not written: %w", err)
	}
	return until, nil
}

// recordAction writes a pause or resume to replay_audit with who asked
// and why, and returns its id.
func recordAction(ctx context.Context, pool *pgxpool.Pool, action, requestedBy, reason string, detail map[string]any) (string, error) {
	if reason == "" {
		return "", fmt.Errorf("%w: %s needs a reason, for the audit trail", ErrScope, action)
	}
	id := newID(action[:2])
	if err := insertAudit(ctx, pool, auditRecord{id: id, action: action, by: requestedBy, reason: reason, scope: detail}); err != nil {
		return "", err
	}
	return id, nil
}
