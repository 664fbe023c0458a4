package dlq_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/sluicehq/sluice/internal/dev/clocktest"
	"github.com/sluicehq/sluice/internal/failure/dlq"
	"github.com/sluicehq/sluice/pkg/messages"

	"github.com/sluicehq/sluice/internal/dev/testenv"
)

// webhook is a scripted alert receiver: it answers the queued statuses in
// order, then 200, and records every request.
type webhook struct {
	srv *httptest.Server

	mu       sync.Mutex
	statuses []int
	requests []webhookRequest
}

type webhookRequest struct {
	key  string
	body []byte
}

func newWebhook(t *testing.T, statuses ...int) *webhook {
	t.Helper()
	w := &webhook{statuses: statuses}
	w.srv = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.mu.Lock()
		w.requests = append(w.requests, webhookRequest{key: r.Header.Get("Idempotency-Key"), body: body})
		status := http.StatusOK
		if len(w.statuses) > 0 {
			status, w.statuses = w.statuses[0], w.statuses[1:]
		}
		w.mu.Unlock()
		rw.WriteHeader(status)
	}))
	t.Cleanup(w.srv.Close)
	return w
}

func (w *webhook) got() []webhookRequest {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]webhookRequest(nil), w.requests...)
}

type alerterBundle struct {
	alerter *dlq.Alerter
	reg     *prometheus.Registry
	log     *testenv.Buffer
}

func setupAlerter(t *testing.T, opts dlq.AlerterConfig) alerterBundle {
	t.Helper()
	b := alerterBundle{reg: prometheus.NewRegistry(), log: &testenv.Buffer{}}
	if opts.RetryDelay == 0 {
		opts.RetryDelay, opts.RetryMaxDelay = time.Millisecond, 5*time.Millisecond
	}
	var err error
	b.alerter, err = dlq.NewAlerter(opts, zerolog.New(b.log), b.reg)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func (b alerterBundle) counter(t *testing.T, name string, labels map[string]string) float64 {
	t.Helper()
	v, _ := metricValue(t, b.reg, name, labels)
	return v
}

const secretText = "customer card 4111 1111 1111 1111"

func escalation(outboxID int64) dlq.Letter {
	l := newLetter("crm", "note-7", 2, outboxID, time.Now())
	l.Disposition, l.ErrorClass, l.ErrorCode, l.Stage = messages.DispositionEscalate, "policy_violation", "card_number", "policy"
	l.ErrorDetail = "rule card_number matched: " + secretText
	l.Payload = []byte(`{"text":"` + secretText + `"}`)
	return l
}

// An escalation reaches the webhook once, with its class and rule and
// without the chunk's text, even when the message is redelivered.
func TestAlerterEscalatesOnceWithoutText(t *testing.T) {
	t.Parallel()
	hook := newWebhook(t)
	b := setupAlerter(t, dlq.AlerterConfig{WebhookURL: hook.srv.URL})
	l := escalation(42)
	for delivery := 1; delivery <= 2; delivery++ {
		l.Delivered = delivery
		if res, err := b.alerter.Handle(context.Background(), l); err != nil || res.Retry {
			t.Fatalf("delivery %d: result %+v, err %v; want ack", delivery, res, err)
		}
	}

	reqs := hook.got()
	if len(reqs) != 1 {
		t.Fatalf("webhook got %d requests; want exactly 1", len(reqs))
	}
	if want := l.DeadLetterID + ":42"; reqs[0].key != want {
		t.Errorf("Idempotency-Key %q; want %q", reqs[0].key, want)
	}
	var event map[string]any
	if err := json.Unmarshal(reqs[0].body, &event); err != nil {
		t.Fatalf("body %s: %v", reqs[0].body, err)
	}
	for k, want := range map[string]any{"kind": "escalation", "error_class": "policy_violation", "error_code": "card_number",
		"dead_letter_id": l.DeadLetterID, "doc_id": l.DocID, "source_id": "crm", "outbox_id": 42.0, "chunk_index": 2.0} {
		if event[k] != want {
			t.Errorf("event %s = %v; want %v", k, event[k], want)
		}
	}
	for _, leak := range []string{secretText, base64.StdEncoding.EncodeToString(l.Payload)} {
		if bytes.Contains(reqs[0].body, []byte(leak)) || strings.Contains(b.log.String(), leak) {
			t.Errorf("webhook body or log contains the chunk's text or payload")
		}
	}
	if got := strings.Count(b.log.String(), `"message":"escalation"`); got != 1 {
		t.Errorf("%d audit lines; want 1 in:\n%s", got, b.log.String())
	}
	if !strings.Contains(b.log.String(), `"level":"warn"`) {
		t.Errorf("audit line is not at warn level:\n%s", b.log.String())
	}
	if got := b.counter(t, "sluice_escalations_total", map[string]string{"rule": "card_number"}); got != 1 {
		t.Errorf("sluice_escalations_total{rule=card_number} = %v; want 1", got)
	}
	if got := b.counter(t, "sluice_dlq_dead_letters_total", map[string]string{"error_class": "policy_violation", "source_id": "crm"}); got != 1 {
		t.Errorf("sluice_dlq_dead_letters_total = %v; want the redelivery not counted", got)
	}
}

// A webhook that fails and recovers gets the escalation; one that refuses
// it is not retried. Which is which is pkg/classify's decision, the same
// as every other stage's: 408 is a timeout to try again, 400 a refusal.
func TestAlerterWebhookFailures(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name     string
		statuses []int
		requests int
		outcome  string
	}{
		{"500 then 200 is retried", []int{500}, 2, "delivered"},
		{"429 twice then 200 is retried", []int{429, 429}, 3, "delivered"},
		{"408 then 200 is retried", []int{408}, 2, "delivered"},
		{"425 then 200 is retried", []int{425}, 2, "delivered"},
		{"501 then 200 is retried within the budget", []int{501}, 2, "delivered"},
		{"400 is not retried", []int{400}, 1, "rejected"},
		{"404 is not retried", []int{404}, 1, "rejected"},
		{"409 is not retried", []int{409}, 1, "rejected"},
		{"422 is not retried", []int{422}, 1, "rejected"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			hook := newWebhook(t, c.statuses...)
			b := setupAlerter(t, dlq.AlerterConfig{WebhookURL: hook.srv.URL})
			if _, err := b.alerter.Handle(context.Background(), escalation(1)); err != nil {
				t.Fatalf("handle: %v; want the letter acked", err)
			}
			if got := len(hook.got()); got != c.requests {
				t.Errorf("webhook got %d requests; want %d", got, c.requests)
			}
			if got := b.counter(t, "sluice_alerts_sent_total", map[string]string{"kind": "escalation", "outcome": c.outcome}); got != 1 {
				t.Errorf("sluice_alerts_sent_total{outcome=%s} = %v; want 1", c.outcome, got)
			}
		})
	}
}

// A webhook that drops the connection fails with an error naming its URL;
// neither the log nor the returned error may carry the token in its path
// or query.
func TestAlerterNeverLogsWebhookToken(t *testing.T) {
	t.Parallel()
	const token = "XOXB-webhook-T0KEN-9f8e7d"
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, _ *http.Request) {
		conn, _, err := rw.(http.Hijacker).Hijack()
		if err == nil {
			_ = conn.Close()
		}
	}))
	t.Cleanup(srv.Close)
	b := setupAlerter(t, dlq.AlerterConfig{WebhookURL: srv.URL + "/services/" + token + "?sig=" + token, MaxRetries: 1})
	_, err := b.alerter.Handle(context.Background(), escalation(3))
	if err == nil {
		t.Fatal("handle succeeded though the webhook dropped every connection")
	}
	logged := b.log.String()
	if !strings.Contains(logged, "alert webhook unreachable") {
		t.Fatalf("the failure was not logged: %s", logged)
	}
	for what, text := range map[string]string{"log": logged, "error": err.Error()} {
		if strings.Contains(text, token) {
			t.Errorf("the %s holds the webhook token: %s", what, text)
		}
		if !strings.Contains(text, srv.URL+"/…redacted") {
			t.Errorf("the %s does not name the webhook host: %s", what, text)
		}
	}
}

// When retries run out Handle fails, so the message comes back; the
// redelivery then gets the escalation through.
func TestAlerterExhaustedRetriesAskForRedelivery(t *testing.T) {
	t.Parallel()
	hook := newWebhook(t, 503, 503, 503)
	b := setupAlerter(t, dlq.AlerterConfig{WebhookURL: hook.srv.URL, MaxRetries: 2})
	l := escalation(7)
	if _, err := b.alerter.Handle(context.Background(), l); err == nil {
		t.Fatal("handle succeeded though the webhook never accepted the event")
	}
	l.Delivered = 2
	if _, err := b.alerter.Handle(context.Background(), l); err != nil {
		t.Fatalf("redelivery: %v", err)
	}
	if got := len(hook.got()); got != 4 {
		t.Errorf("webhook got %d requests; want 3 failed attempts and 1 success", got)
	}
	if got := b.counter(t, "sluice_dlq_dead_letters_total", nil); got != 1 {
		t.Errorf("dead letter counted %v times; want once", got)
	}
}

// A spike alerts once when the window reaches the threshold, stays quiet
// while it stays there, and re-arms after the window drains.
func TestAlerterSpikeFiresOnceAndRearms(t *testing.T) {
	t.Parallel()
	hook := newWebhook(t)
	clock := clocktest.New(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	b := setupAlerter(t, dlq.AlerterConfig{WebhookURL: hook.srv.URL, SpikeWindow: time.Minute, SpikeThreshold: 3, Now: clock.Now})
	var outbox int64
	park := func(source string, failedAt time.Time) {
		t.Helper()
		outbox++
		l := newLetter(source, "doc", int(outbox), outbox, failedAt)
		if _, err := b.alerter.Handle(context.Background(), l); err != nil {
			t.Fatal(err)
		}
	}
	spikes := func() []map[string]any {
		var out []map[string]any
		for _, r := range hook.got() {
			var e map[string]any
			if err := json.Unmarshal(r.body, &e); err != nil {
				t.Fatal(err)
			}
			if e["kind"] == "spike" {
				out = append(out, e)
			}
		}
		return out
	}
	recent := func() float64 { return b.counter(t, "sluice_dlq_parked_recent", nil) }

	park("old", clock.Now().Add(-2*time.Minute)) // history, not a spike
	park("a", clock.Now())
	park("b", clock.Now())
	if n := len(spikes()); n != 0 || recent() != 2 {
		t.Fatalf("below the threshold: %d spikes, parked_recent %v; want 0 and 2", n, recent())
	}
	park("a", clock.Now())
	park("a", clock.Now())
	park("b", clock.Now())
	got := spikes()
	if len(got) != 1 || recent() != 5 {
		t.Fatalf("at and past the threshold: %d spikes, parked_recent %v; want 1 and 5", len(got), recent())
	}
	if got[0]["count"] != 3.0 || got[0]["threshold"] != 3.0 {
		t.Errorf("spike event %v; want count 3, threshold 3", got[0])
	}
	if top, _ := got[0]["top_sources"].([]any); len(top) == 0 || top[0].(map[string]any)["name"] != "a" {
		t.Errorf("top sources %v; want a first", got[0]["top_sources"])
	}

	clock.Advance(2 * time.Minute)
	if recent() != 0 {
		t.Fatalf("parked_recent %v after the window drained; want 0", recent())
	}
	park("c", clock.Now())
	park("c", clock.Now())
	if n := len(spikes()); n != 1 {
		t.Fatalf("%d spikes while refilling below the threshold; want still 1", n)
	}
	park("c", clock.Now())
	if n := len(spikes()); n != 2 {
		t.Errorf("%d spikes after the window refilled to the threshold; want a second", n)
	}
}

// Bad options are refused with a message that says what to change.
func TestAlerterOptionsValidate(t *testing.T) {
	t.Parallel()
	for _, o := range []dlq.AlerterConfig{
		{WebhookURL: "hooks.example.com/x"},
		{Timeout: -time.Second},
		{RetryDelay: time.Second, RetryMaxDelay: time.Millisecond},
	} {
		if _, err := dlq.NewAlerter(o, zerolog.Nop(), nil); err == nil {
			t.Errorf("NewAlerter(%+v) succeeded; want a validation error", o)
		}
	}
	// The message about a bad URL must not repeat the token inside it.
	_, err := dlq.NewAlerter(dlq.AlerterConfig{WebhookURL: "ftp://hooks.example.com/services/T0KEN-in-path"}, zerolog.Nop(), nil)
	if err == nil || strings.Contains(err.Error(), "T0KEN") {
		t.Errorf("bad webhook URL: %v; want an error without the token", err)
	}
}
