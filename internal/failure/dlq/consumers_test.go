package dlq_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/rs/zerolog"

	"github.com/sluicehq/sluice/internal/dev/testenv"
	"github.com/sluicehq/sluice/internal/failure/dlq"
	"github.com/sluicehq/sluice/internal/platform/broker"
	"github.com/sluicehq/sluice/internal/store/deadletter"
	"github.com/sluicehq/sluice/pkg/messages"
	"github.com/sluicehq/sluice/pkg/outbox"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// newLetter returns a valid quarantine dead letter for chunk index of the
// document native in source src.
func newLetter(src, native string, index int, outboxID int64, failedAt time.Time) dlq.Letter {
	docID := messages.DocID(src, native)
	return dlq.Letter{
		DeadLetter: messages.DeadLetter{
			Schema:         messages.DeadLetterSchema,
			DeadLetterID:   messages.DeadLetterID(docID, index),
			DocID:          docID,
			ChunkIndex:     index,
			DocVersion:     1,
			SourceID:       src,
			SourceNativeID: native,
			RunID:          "run-1",
			Disposition:    messages.DispositionQuarantine,
			ErrorClass:     "bad_request",
			ErrorCode:      "http_400",
			ErrorDetail:    "embedder refused the input",
			Stage:          "embed",
			Attempts:       1,
			FailedAt:       failedAt.UTC().Truncate(time.Microsecond),
			Payload:        []byte(`{"text":"chunk"}`),
		},
		OutboxID:  outboxID,
		Delivered: 1,
	}
}

// metricValue sums the samples of the named metric whose labels include
// labels; found is false when there is none.
func metricValue(t *testing.T, g prometheus.Gatherer, name string, labels map[string]string) (sum float64, found bool) {
	t.Helper()
	families, err := g.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	next:
		for _, m := range f.GetMetric() {
			for k, v := range labels {
				if !slices.ContainsFunc(m.GetLabel(), func(p *dto.LabelPair) bool { return p.GetName() == k && p.GetValue() == v }) {
					continue next
				}
			}
			found = true
			sum += m.GetCounter().GetValue() + m.GetGauge().GetValue()
		}
	}
	return sum, found
}

// waitUntil polls cond until it holds or timeout passes.
func waitUntil(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func countRows(t *testing.T, db *testenv.Database, query string, args ...any) int {
	t.Helper()
	var n int
	if err := db.Pool.QueryRow(context.Background(), query, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

// recorder wraps a Handler and remembers the outbox ids it processed.
type recorder struct {
	mu   sync.Mutex
	seen map[int64]int
}

func (r *recorder) wrap(h dlq.Handler) dlq.Handler {
	return func(ctx context.Context, l dlq.Letter) (dlq.Result, error) {
		res, err := h(ctx, l)
		if err == nil && !res.Retry {
			r.mu.Lock()
			if r.seen == nil {
				r.seen = map[int64]int{}
			}
			r.seen[l.OutboxID]++
			r.mu.Unlock()
		}
		return res, err
	}
}

func (r *recorder) ids() []int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	var ids []int64
	for id := range r.seen {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// Dead letters written in one transaction reach every DLQ durable through
// the outbox relay: triage records each, the alerter counts each and
// escalates the escalation, the replayer durable sees only the retries,
// and the stream holds each dead letter once.
func TestDeadLettersFanOutToEveryDurable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testenv.NewDatabase(t)
	_, js := testenv.NewJetStream(t, broker.Topology{})

	now := time.Now().UTC()
	retryAt := now.Add(time.Hour)
	dispositions := []string{messages.DispositionRetry, messages.DispositionQuarantine, messages.DispositionRetry,
		messages.DispositionAmbiguous, messages.DispositionEscalate}
	err := pgx.BeginFunc(ctx, db.Pool, func(tx pgx.Tx) error {
		var dls []messages.DeadLetter
		for i, d := range dispositions {
			l := newLetter("fanout", fmt.Sprintf("doc-%d", i), 0, 0, now)
			l.Disposition = d
			switch d {
			case messages.DispositionRetry:
				l.ErrorClass, l.NextRetryAt = "transient_exhausted", &retryAt
			case messages.DispositionEscalate:
				l.ErrorClass, l.ErrorCode = "policy_violation", "secret_pattern"
			}
			dls = append(dls, l.DeadLetter)
		}
		return deadletter.Write(ctx, tx, dls)
	})
	if err != nil {
		t.Fatal(err)
	}
	relay := outbox.NewRelay(outbox.RelayConfig{}, outbox.RelayDeps{Pool: db.Pool, JS: js, Log: zerolog.Nop()})
	if n, err := relay.RelayOnce(ctx); err != nil || n != 5 {
		t.Fatalf("relay published %d, err %v; want 5", n, err)
	}
	if n, err := relay.RelayOnce(ctx); err != nil || n != 0 {
		t.Fatalf("second relay pass published %d, err %v; want nothing", n, err)
	}

	var escalations sync.Map
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		escalations.Store(r.Header.Get("Idempotency-Key"), true)
	}))
	t.Cleanup(hook.Close)
	reg := prometheus.NewRegistry()
	triage := dlq.NewTriage(dlq.TriageConfig{}, dlq.TriageDeps{Pool: db.Pool, Log: zerolog.Nop(), Registry: reg})
	alerter, err := dlq.NewAlerter(dlq.AlerterConfig{WebhookURL: hook.URL}, zerolog.Nop(), reg)
	if err != nil {
		t.Fatal(err)
	}
	var triaged, alerted, replayer recorder
	runCtx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for durable, h := range map[string]dlq.Handler{
		broker.TriageConsumer:   triaged.wrap(triage.Handle),
		broker.AlerterConsumer:  alerted.wrap(alerter.Handle),
		broker.ReplayerConsumer: replayer.wrap(func(context.Context, dlq.Letter) (dlq.Result, error) { return dlq.Result{}, nil }),
	} {
		wg.Go(func() {
			if err := dlq.Consume(runCtx, js, durable, zerolog.Nop(), h); err != nil {
				t.Errorf("consume %s: %v", durable, err)
			}
		})
	}
	defer func() { cancel(); wg.Wait() }()

	all, retries := []int64{1, 2, 3, 4, 5}, []int64{1, 3}
	waitUntil(t, 20*time.Second, "every durable to process its dead letters", func() bool {
		return slices.Equal(triaged.ids(), all) && slices.Equal(alerted.ids(), all) && slices.Equal(replayer.ids(), retries)
	})
	if n := countRows(t, db, `SELECT count(*) FROM dead_letters WHERE last_outbox_id BETWEEN 1 AND 5`); n != 5 {
		t.Errorf("dead_letters has %d rows from the outbox; want 5", n)
	}
	if n, _ := metricValue(t, reg, "sluice_dlq_dead_letters_total", nil); n != 5 {
		t.Errorf("alerter counted %v dead letters; want 5", n)
	}
	waitUntil(t, 5*time.Second, "the escalation webhook", func() bool {
		_, ok := escalations.Load(messages.DeadLetterID(messages.DocID("fanout", "doc-4"), 0) + ":5")
		return ok
	})
	// The durables have settled everything: nothing is pending or waiting
	// for an ack, so no durable got anything it should not have.
	for _, durable := range []string{broker.TriageConsumer, broker.AlerterConsumer, broker.ReplayerConsumer} {
		waitUntil(t, 5*time.Second, durable+" to settle", func() bool {
			info, err := js.Consumer(ctx, broker.DLQStream, durable)
			if err != nil {
				t.Fatal(err)
			}
			ci := info.CachedInfo()
			if fresh, err := info.Info(ctx); err == nil {
				ci = fresh
			}
			return ci.NumPending == 0 && ci.NumAckPending == 0
		})
	}
	if got := dlqMsgIDs(t, js); !slices.Equal(got, []string{"dl:1", "dl:2", "dl:3", "dl:4", "dl:5"}) {
		t.Errorf("DLQ stream holds %v; want dl:1 … dl:5 once each", got)
	}
}

// dlqMsgIDs returns the Nats-Msg-Id of every message in the DLQ stream,
// sorted, duplicates kept.
func dlqMsgIDs(t *testing.T, js jetstream.JetStream) []string {
	t.Helper()
	ctx := context.Background()
	cons, err := js.OrderedConsumer(ctx, broker.DLQStream, jetstream.OrderedConsumerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	info, err := cons.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	if info.NumPending == 0 {
		return ids
	}
	batch, err := cons.FetchNoWait(int(info.NumPending))
	if err != nil {
		t.Fatal(err)
	}
	for m := range batch.Messages() {
		ids = append(ids, m.Headers().Get(jetstream.MsgIDHeader))
	}
	slices.Sort(ids)
	return ids
}
