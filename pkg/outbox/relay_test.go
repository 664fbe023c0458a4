package outbox_test

import (
	"context"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/sluicehq/sluice/internal/dev/testenv"
	"github.com/sluicehq/sluice/internal/platform/broker"
	"github.com/sluicehq/sluice/pkg/outbox"
)

type relayBundle struct {
	db *testenv.Database
	js jetstream.JetStream
}

func setupRelay(t *testing.T) relayBundle {
	t.Helper()
	srv := testenv.NewNATS(t)
	nc, js, err := broker.Connect(broker.ConnConfig{URL: srv.URL}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	if err := broker.Ensure(context.Background(), js, broker.Topology{}); err != nil {
		t.Fatal(err)
	}
	return relayBundle{db: testenv.NewDatabase(t), js: js}
}

func (b relayBundle) dlqMessages(t *testing.T) map[string]int {
	t.Helper()
	ctx := context.Background()
	cons, err := b.js.OrderedConsumer(ctx, broker.DLQStream, jetstream.OrderedConsumerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	info, err := cons.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	if info.NumPending == 0 {
		return seen
	}
	batch, err := cons.FetchNoWait(int(info.NumPending))
	if err != nil {
		t.Fatal(err)
	}
	for m := range batch.Messages() {
		seen[m.Headers().Get(jetstream.MsgIDHeader)]++
	}
	return seen
}

// Rows committed out of order are all published, a rolled-back one never.
func TestRelayPublishesCommittedRowsOnly(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupRelay(t)
	txs := make([]pgx.Tx, 4)
	for i := range txs {
		tx, err := b.db.Pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := outbox.Write(ctx, tx, testenv.DeadLetter(t, "s", i)); err != nil {
			t.Fatal(err)
		}
		txs[i] = tx
	}
	if err := txs[0].Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	relay := outbox.NewRelay(outbox.RelayConfig{}, outbox.RelayDeps{Pool: b.db.Pool, JS: b.js, Log: zerolog.Nop()})
	// The newest commits first: a relay that trusted id order would skip
	// the older rows for good.
	for i := 3; i >= 1; i-- {
		if err := txs[i].Commit(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := relay.RelayOnce(ctx); err != nil {
			t.Fatal(err)
		}
	}
	got := b.dlqMessages(t)
	if len(got) != 3 || got["dl:1"] != 0 {
		t.Fatalf("published %v; want dl:2, dl:3, dl:4 once each and never the rolled-back dl:1", got)
	}
	var unpublished int
	if err := b.db.Pool.QueryRow(ctx, `SELECT count(*) FROM outbox WHERE published_at IS NULL`).Scan(&unpublished); err != nil {
		t.Fatal(err)
	}
	if unpublished != 0 {
		t.Fatalf("%d committed rows left unpublished", unpublished)
	}
}

// A relay that dies after publishing and before marking publishes the row
// again on restart, and JetStream keeps one copy.
func TestRelayCrashAfterPublishKeepsOneCopy(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupRelay(t)
	tx, err := b.db.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := outbox.Write(ctx, tx, testenv.DeadLetter(t, "s", 0)); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	type crash struct{}
	dying := outbox.NewRelay(outbox.RelayConfig{}, outbox.RelayDeps{Pool: b.db.Pool, JS: b.js, Log: zerolog.Nop(), Crash: func(point string) {
		if point == "after-publish-before-mark" {
			panic(crash{})
		}
	}})
	func() {
		defer func() {
			if r := recover(); r == nil {
				t.Fatal("crash point not reached")
			}
		}()
		_, _ = dying.RelayOnce(ctx)
	}()
	healthy := outbox.NewRelay(outbox.RelayConfig{}, outbox.RelayDeps{Pool: b.db.Pool, JS: b.js, Log: zerolog.Nop()})
	if n, err := healthy.RelayOnce(ctx); err != nil || n != 1 {
		t.Fatalf("restarted relay published %d, err %v; want the row again", n, err)
	}
	if got := b.dlqMessages(t); len(got) != 1 || got["dl:1"] != 1 {
		t.Fatalf("DLQ holds %v; want dl:1 exactly once", got)
	}
}

// Several relays at once publish every row exactly once.
func TestConcurrentRelays(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupRelay(t)
	for i := range 300 {
		if _, err := outbox.Write(ctx, b.db.Pool, testenv.DeadLetter(t, "s", i)); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := outbox.NewRelay(outbox.RelayConfig{BatchSize: 20}, outbox.RelayDeps{Pool: b.db.Pool, JS: b.js, Log: zerolog.Nop()})
			for {
				n, err := r.RelayOnce(ctx)
				if err != nil {
					t.Error(err)
					return
				}
				if n == 0 {
					return
				}
			}
		}()
	}
	wg.Wait()
	got := b.dlqMessages(t)
	if len(got) != 300 {
		t.Fatalf("published %d distinct rows, want 300", len(got))
	}
	for id, n := range got {
		if n != 1 {
			t.Fatalf("%s published %d times", id, n)
		}
	}
}
