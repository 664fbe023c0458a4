package outbox_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testenv"
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

	msg := outbox.Message{Subject: "dlq.quarantine.s", Headers: map[string]string{"k": "v"}, Payload: []byte(`{"a":1}`)}
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
