package outbox_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/dev/testenv"
	"github.com/sluicehq/sluice/pkg/outbox"
)

func TestMain(m *testing.M) { testenv.Main(m) }

func TestWriteCommitsWithTheCallersTransaction(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testenv.NewDatabase(t)

	listener, err := db.Pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer listener.Release()
	if _, err := listener.Exec(ctx, "LISTEN "+outbox.NotifyChannel); err != nil {
		t.Fatal(err)
	}

	msg := testenv.DeadLetter(t, "s", 1)
	rolledBack, err := db.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := outbox.Write(ctx, rolledBack, msg); err != nil {
		t.Fatal(err)
	}
	if err := rolledBack.Rollback(ctx); err != nil {
		t.Fatal(err)
	}

	tx, err := db.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	id, err := outbox.Write(ctx, tx, msg)
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}

	var n int
	var msgID string
	if err := db.Pool.QueryRow(ctx, `SELECT count(*), max(msg_id) FROM outbox`).Scan(&n, &msgID); err != nil {
		t.Fatal(err)
	}
	if n != 1 || msgID != fmt.Sprintf("dl:%d", id) {
		t.Fatalf("outbox has %d rows, msg_id %q; want only the committed one, dl:%d", n, msgID, id)
	}
	waitCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := listener.Conn().WaitForNotification(waitCtx); err != nil {
		t.Fatalf("no notification after commit: %v", err)
	}
}

func TestWriteRejectsBadMessages(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testenv.NewDatabase(t)
	tx, err := db.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := outbox.Write(ctx, tx, outbox.Message{Subject: "", Payload: []byte(`{}`)}); err == nil {
		t.Error("empty subject accepted")
	}
	if _, err := outbox.Write(ctx, tx, outbox.Message{Subject: "dlq.x.y", Payload: []byte(`not json`)}); err == nil {
		t.Error("non-JSON payload accepted")
	}
}

// WriteAll writes a batch in one statement and returns each message's id
// at its position, whatever other sessions write meanwhile; a bad message
// anywhere in the batch writes nothing.
func TestWriteAllReturnsEachMessagesID(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testenv.NewDatabase(t)
	// Another row comes first, so the batch's ids do not start at 1.
	if _, err := outbox.Write(ctx, db.Pool, testenv.DeadLetter(t, "other", 0)); err != nil {
		t.Fatal(err)
	}
	msgs := make([]outbox.Message, 5)
	for i := range msgs {
		msgs[i] = testenv.DeadLetter(t, fmt.Sprintf("s%d", i), i)
		msgs[i].Headers["Sluice-N"] = fmt.Sprint(i)
	}
	tx, err := db.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	ids, err := outbox.WriteAll(ctx, tx, msgs)
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if len(ids) != len(msgs) {
		t.Fatalf("%d ids for %d messages", len(ids), len(msgs))
	}
	for i, id := range ids {
		var subject, n string
		var payload int
		if err := db.Pool.QueryRow(ctx, `SELECT subject, headers->>'Sluice-N', (payload->>'chunk_index')::int FROM outbox WHERE id = $1`, id).
			Scan(&subject, &n, &payload); err != nil {
			t.Fatalf("message %d, id %d: %v", i, id, err)
		}
		if subject != msgs[i].Subject || n != fmt.Sprint(i) || payload != i {
			t.Errorf("id %d holds %s, header n=%s, payload n=%d; want message %d", id, subject, n, payload, i)
		}
	}

	bad := append(append([]outbox.Message{}, msgs[:2]...), outbox.Message{Subject: "dlq.x.y", Payload: []byte(`{`)})
	if _, err := outbox.WriteAll(ctx, db.Pool, bad); err == nil {
		t.Error("a batch with a non-JSON payload was accepted")
	}
	var rows int
	if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM outbox`).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if rows != 1+len(msgs) {
		t.Errorf("outbox has %d rows, want %d: the bad batch wrote some", rows, 1+len(msgs))
	}
}
