package dlq_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/rs/zerolog"

	"github.com/sluicehq/sluice/internal/dev/testenv"
	"github.com/sluicehq/sluice/internal/failure/dlq"
	"github.com/sluicehq/sluice/internal/platform/broker"
	"github.com/sluicehq/sluice/internal/store/deadletter"
	"github.com/sluicehq/sluice/pkg/messages"
	"github.com/sluicehq/sluice/pkg/outbox"
)

// A dead letter too large for the DLQ stream still reaches dead_letters
// whole, its payload kept in PostgreSQL; and an outbox row JetStream keeps
// refusing backs off on its own while the relay publishes the rows behind
// it.
func TestOversizedDeadLetterReachesTriageAndNoRowBlocksTheRelay(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testenv.NewDatabase(t)
	_, js := testenv.NewJetStream(t, broker.Topology{})

	// A job near the message limit: its dead letter, base64 and all, is
	// well over the broker's max_payload.
	payload := bytes.Repeat([]byte("p"), messages.MaxMessageBytes-1024)
	big := newLetter("big", "big.txt", 0, 0, time.Now()).DeadLetter
	big.Payload = payload
	small := newLetter("small", "small.txt", 0, 0, time.Now()).DeadLetter
	// A dead letter written whole, past the broker's max_payload: JetStream
	// refuses it on every attempt.
	huge := newLetter("huge", "huge.txt", 0, 0, time.Now()).DeadLetter
	huge.Payload = payload
	raw, err := huge.Encode()
	if err != nil {
		t.Fatal(err)
	}
	err = pgx.BeginFunc(ctx, db.Pool, func(tx pgx.Tx) error {
		if _, err := outbox.Write(ctx, tx, outbox.Message{Subject: messages.DLQSubject(huge.Disposition, huge.SourceID), Payload: raw}); err != nil {
			return err
		}
		// In one batch, the big one second: its payload must be kept
		// under its own outbox id, not its neighbour's.
		return deadletter.Write(ctx, tx, []messages.DeadLetter{small, big})
	})
	if err != nil {
		t.Fatal(err)
	}

	relay := outbox.NewRelay(outbox.RelayConfig{PollInterval: 50 * time.Millisecond, BatchSize: 1}, outbox.RelayDeps{Pool: db.Pool, JS: js, Log: zerolog.Nop()})
	triage := dlq.NewTriage(dlq.TriageConfig{}, dlq.TriageDeps{Pool: db.Pool, Log: zerolog.Nop()})
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{}, 2)
	go func() { _ = relay.Run(runCtx); done <- struct{}{} }()
	go func() {
		_ = dlq.Consume(runCtx, js, broker.TriageConsumer, zerolog.Nop(), dlq.WithPayloads(db.Pool, triage.Handle))
		done <- struct{}{}
	}()
	t.Cleanup(func() { cancel(); <-done; <-done })

	waitUntil(t, 30*time.Second, "both dead letters triaged", func() bool {
		return countRows(t, db, `SELECT count(*) FROM dead_letters`) == 2
	})
	var got []byte
	if err := db.Pool.QueryRow(ctx, `SELECT payload FROM dead_letters WHERE source_id = 'big'`).Scan(&got); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, payload) {
		t.Errorf("the oversized dead letter's payload arrived as %d bytes, want its %d bytes intact", len(got), len(payload))
	}
	var attempts int
	var lastErr string
	if err := db.Pool.QueryRow(ctx, `SELECT attempts, coalesce(last_error, '') FROM outbox WHERE payload->>'source_id' = 'huge'`).Scan(&attempts, &lastErr); err != nil {
		t.Fatal(err)
	}
	if attempts == 0 || lastErr == "" {
		t.Errorf("refused row: %d attempts, last error %q; want its failures recorded", attempts, lastErr)
	}
	if strings.Contains(lastErr, string(payload[:64])) {
		t.Error("the refused row's error quotes a payload")
	}
}
