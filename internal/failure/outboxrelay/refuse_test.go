package outboxrelay_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/dev/localenv"
	"github.com/sluicehq/sluice/internal/dev/testenv"
	"github.com/sluicehq/sluice/internal/failure/outboxrelay"
	"github.com/sluicehq/sluice/internal/platform/broker"
	"github.com/sluicehq/sluice/internal/platform/natsauth"
	"github.com/sluicehq/sluice/migrations"
	"github.com/sluicehq/sluice/pkg/outbox"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// The relay, running as its own PostgreSQL role, publishes well-formed
// dead letters and refuses anything else in the outbox: a row that passes
// the table's CHECK but is no dead letter, and a row from before the
// CHECK. A refused row stays, unpublished and flagged, and is counted and
// logged; the rows behind it are published.
func TestRelayRefusesMalformedRows(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testenv.NewDatabase(t)
	n, js := testenv.NewJetStream(t, broker.Topology{})

	write := func(msg outbox.Message) int64 {
		t.Helper()
		id, err := outbox.Write(ctx, db.Pool, msg)
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	first := write(testenv.DeadLetter(t, "good", 0))
	// Every field the CHECK looks at is in place, but no dead letter has a
	// negative chunk index.
	odd := testenv.DeadLetter(t, "odd", 0)
	var fields map[string]any
	if err := json.Unmarshal(odd.Payload, &fields); err != nil {
		t.Fatal(err)
	}
	fields["chunk_index"] = -1
	var err error
	if odd.Payload, err = json.Marshal(fields); err != nil {
		t.Fatal(err)
	}
	negative := write(odd)
	// A row written before migration 20 added the CHECK, which it added
	// NOT VALID: the relay is the last line.
	var old int64
	var check string
	if err := db.Pool.QueryRow(ctx, `SELECT pg_get_constraintdef(oid) FROM pg_constraint WHERE conname = 'outbox_dead_letter'`).Scan(&check); err != nil {
		t.Fatal(err)
	}
	tx, err := db.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, sql := range []string{
		`ALTER TABLE outbox DROP CONSTRAINT outbox_dead_letter`,
		`INSERT INTO outbox (subject, headers, payload) VALUES ('ingest.chunks.good', '{"Nats-Msg-Id": "x"}', '{"doc_id": "d"}')`,
		`ALTER TABLE outbox ADD CONSTRAINT outbox_dead_letter ` + check,
	} {
		if _, err := tx.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.QueryRow(ctx, `SELECT max(id) FROM outbox`).Scan(&old); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	last := write(testenv.DeadLetter(t, "good", 1))

	metrics, err := localenv.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{
		"DATABASE_URL": db.RoleURL(migrations.RelayRole), "NATS_URL": n.URLFor(natsauth.Relay),
		"METRICS_ADDR": metrics, "RELAY_POLL_INTERVAL": "100ms", "LOG_FORMAT": "json",
	}
	log := &testenv.Buffer{}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- outboxrelay.Run(runCtx, nil, func(k string) (string, bool) { v, ok := env[k]; return v, ok }, log)
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("relay: %v\n%s", err, log)
		}
	})

	state := func(id int64) (published, refused bool, lastErr string) {
		t.Helper()
		if err := db.Pool.QueryRow(ctx, `
			SELECT published_at IS NOT NULL, refused_at IS NOT NULL, coalesce(last_error, '') FROM outbox WHERE id = $1`, id).
			Scan(&published, &refused, &lastErr); err != nil {
			t.Fatal(err)
		}
		return published, refused, lastErr
	}
	testenv.Eventually(t, 30*time.Second, "the good rows published", func() bool {
		a, _, _ := state(first)
		b, _, _ := state(last)
		return a && b
	})
	for _, id := range []int64{negative, old} {
		published, refused, lastErr := state(id)
		if published || !refused || !strings.HasPrefix(lastErr, "refused: ") {
			t.Errorf("outbox row %d: published %v, flagged %v, last error %q; want it unpublished, flagged and why", id, published, refused, lastErr)
		}
	}
	for stream, want := range map[string]uint64{broker.DLQStream: 2, broker.IngestStream: 0} {
		s, err := js.Stream(ctx, stream)
		if err != nil {
			t.Fatal(err)
		}
		info, err := s.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if info.State.Msgs != want {
			t.Errorf("%s holds %d messages, want %d: only the well-formed dead letters are published", stream, info.State.Msgs, want)
		}
	}
	resp, err := http.Get("http://" + metrics + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(body), "\nsluice_outbox_refused_total 2\n") {
		t.Errorf("metrics lack sluice_outbox_refused_total 2:\n%s", body)
	}
	if got := strings.Count(log.String(), "outbox row refused"); got != 2 {
		t.Errorf("%d refusals logged, want 2:\n%s", got, log)
	}
}
