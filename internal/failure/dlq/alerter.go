package dlq

import (
	"container/list"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/sluicehq/sluice/internal/failure/webhook"
	"github.com/sluicehq/sluice/internal/platform/config"
	"github.com/sluicehq/sluice/pkg/messages"
)

// AlerterConfig configures an Alerter. The zero value gives the defaults:
// log-only escalations and spike detection at 100 dead letters in 5m.
type AlerterConfig struct {
	// WebhookURL receives alert events as JSON POSTs. Empty means log only.
	// Defaults to "".
	WebhookURL string
	// HTTPClient sends the webhook requests. Defaults to a client with no
	// overall timeout of its own; Timeout bounds each attempt.
	HTTPClient *http.Client
	// Timeout bounds one webhook attempt. Defaults to 5s.
	Timeout time.Duration
	// MaxRetries is how many times a failed webhook POST is retried before
	// Handle gives up and asks for redelivery: a failure pkg/classify
	// calls transient or ambiguous (a network error, 408, 425, 429, a
	// 5xx); a refusal it calls permanent (400, 401, 403, 404, 422, …) is
	// not retried. Negative means none. Defaults to 3. Keep (MaxRetries+1) ×
	// Timeout plus the delays below the alerter durable's AckWait (60s by
	// default), or JetStream redelivers the message while it is in hand.
	MaxRetries int
	// RetryDelay is the ceiling of the first retry's delay, doubling per
	// retry, with full jitter (classify.Backoff); a Retry-After header,
	// capped at RetryMaxDelay, is the least delay. Defaults to 250ms.
	RetryDelay time.Duration
	// RetryMaxDelay caps the delay between retries. Defaults to 5s.
	RetryMaxDelay time.Duration
	// SpikeWindow is the sliding window, over dead letters' FailedAt, in
	// which spikes are counted. Defaults to DefaultSpikeWindow.
	SpikeWindow time.Duration
	// SpikeThreshold is the number of dead letters within SpikeWindow that
	// raises a spike alert. Negative disables spike alerts (the
	// sluice_dlq_parked_recent gauge still counts). Defaults to
	// DefaultSpikeThreshold.
	SpikeThreshold int
	// SpikeTopN is how many top sources and error classes a spike event
	// lists. Defaults to 5.
	SpikeTopN int
	// DedupeSize bounds how many recent dead letters (by dead letter id and
	// outbox id) the alerter remembers, so that a redelivery is neither
	// counted nor sent twice within the process. Defaults to 10,000.
	DedupeSize int
	// Now is the clock for the spike window. Defaults to time.Now.
	Now func() time.Time
}

// Defaults for an AlerterConfig whose fields are zero.
const (
	defaultAlertTimeout  = 5 * time.Second
	defaultAlertRetries  = 3
	defaultAlertDelay    = 250 * time.Millisecond
	defaultAlertMaxDelay = 5 * time.Second
	defaultSpikeTopN     = 5
	defaultDedupeSize    = 10_000
)

// Defaults of the spike detector, read by the dlq-replayer's flags too.
const (
	// DefaultSpikeWindow is AlerterConfig.SpikeWindow's default.
	DefaultSpikeWindow = 5 * time.Minute
	// DefaultSpikeThreshold is AlerterConfig.SpikeThreshold's default.
	DefaultSpikeThreshold = 100
)

func (o *AlerterConfig) applyDefaults() {
	if o.HTTPClient == nil {
		o.HTTPClient = &http.Client{}
	}
	if o.Timeout == 0 {
		o.Timeout = defaultAlertTimeout
	}
	switch {
	case o.MaxRetries == 0:
		o.MaxRetries = defaultAlertRetries
	case o.MaxRetries < 0:
		o.MaxRetries = 0
	}
	if o.RetryDelay == 0 {
		o.RetryDelay = defaultAlertDelay
	}
	if o.RetryMaxDelay == 0 {
		o.RetryMaxDelay = max(defaultAlertMaxDelay, o.RetryDelay)
	}
	if o.SpikeWindow == 0 {
		o.SpikeWindow = DefaultSpikeWindow
	}
	if o.SpikeThreshold == 0 {
		o.SpikeThreshold = DefaultSpikeThreshold
	}
	if o.SpikeTopN == 0 {
		o.SpikeTopN = defaultSpikeTopN
	}
	if o.DedupeSize == 0 {
		o.DedupeSize = defaultDedupeSize
	}
	if o.Now == nil {
		o.Now = time.Now
	}
}

// Validate reports the first problem with o, saying how to fix it.
func (o AlerterConfig) Validate() error {
	if o.WebhookURL != "" {
		u, err := url.Parse(o.WebhookURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("alerter: webhook URL %q: use an absolute http:// or https:// URL, or empty to log only", config.RedactURL(o.WebhookURL))
		}
	}
	if o.Timeout < 0 || o.RetryDelay < 0 || o.RetryMaxDelay < 0 || o.SpikeWindow < 0 {
		return errors.New("alerter: durations must not be negative (0 means the default)")
	}
	if o.RetryDelay > 0 && o.RetryMaxDelay > 0 && o.RetryMaxDelay < o.RetryDelay {
		return fmt.Errorf("alerter: RetryMaxDelay %v is below RetryDelay %v; raise it or lower RetryDelay", o.RetryMaxDelay, o.RetryDelay)
	}
	if o.SpikeTopN < 0 || o.DedupeSize < 0 {
		return errors.New("alerter: SpikeTopN and DedupeSize must not be negative (0 means the default)")
	}
	return nil
}

// Alerter is the DLQ consumer that tells people about dead letters: it
// posts every escalation (a compliance policy match) to a webhook and the
// audit log, raises one alert when dead letters spike, and counts dead
// letters by class and source.
//
// Webhook delivery is at-least-once: a failed POST is retried, and when
// retries run out Handle fails so that JetStream redelivers the message
// later. Each event carries an Idempotency-Key header (for an escalation
// "<dead_letter_id>:<outbox_id>") by which the receiver can drop the
// duplicates a crash or a lost ack produce; within one process, a dead
// letter already delivered is not sent again. Events carry ids and error
// classes only, never chunk text, payloads or error details, since an
// escalation is by definition a chunk whose text must not spread.
//
// Alerter is safe for concurrent use.
type Alerter struct {
	opts    AlerterConfig
	log     zerolog.Logger
	hook    *webhook.Client
	metrics *alerterMetrics

	mu    sync.Mutex
	seen  *recentLetters
	spike *spikeWindow
}

// NewAlerter returns an Alerter after applying defaults to opts and
// validating them. It registers sluice_dlq_dead_letters_total,
// sluice_escalations_total, sluice_alerts_sent_total and
// sluice_dlq_parked_recent on reg (nil for none).
func NewAlerter(opts AlerterConfig, log zerolog.Logger, reg prometheus.Registerer) (*Alerter, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	opts.applyDefaults()
	a := &Alerter{
		opts:  opts,
		log:   log,
		seen:  newRecentLetters(opts.DedupeSize),
		spike: newSpikeWindow(opts.SpikeWindow, opts.SpikeThreshold),
	}
	a.metrics = newAlerterMetrics(a.parkedRecent)
	if err := a.metrics.register(reg); err != nil {
		return nil, fmt.Errorf("alerter metrics: %w", err)
	}
	a.hook = webhook.New(webhook.Config{URL: opts.WebhookURL, HTTPClient: opts.HTTPClient, Timeout: opts.Timeout,
		MaxRetries: opts.MaxRetries, RetryDelay: opts.RetryDelay, RetryMaxDelay: opts.RetryMaxDelay, UserAgent: "sluice-alerter"})
	return a, nil
}

// Handle counts l, feeds the spike detector and, for an escalation, sends
// the webhook event. It is a Handler. It fails only when an escalation
// could not be delivered after the retries, so that the message comes back
// later; a webhook that rejects an event with a 4xx other than 429 will
// reject it again, so that is logged and the message acknowledged.
func (a *Alerter) Handle(ctx context.Context, l Letter) (Result, error) {
	key := idempotencyKey(l)
	state, spike := a.observe(l, key)
	if spike != nil {
		// A spike is a side effect of this letter, not its work: failing
		// the letter for it would only redeliver a letter already counted.
		_ = a.sendSpike(ctx, spike)
	}
	if l.Disposition != messages.DispositionEscalate || a.delivered(state) {
		return Result{}, nil
	}
	body, err := json.Marshal(newEscalationEvent(l))
	if err != nil {
		return Result{}, fmt.Errorf("encode escalation: %w", err)
	}
	if err := a.send(ctx, kindEscalation, key, body); err != nil {
		return Result{}, fmt.Errorf("escalation %s: %w", key, err)
	}
	a.markDelivered(state)
	return Result{}, nil
}

// observe counts l once per process and feeds the spike detector. It
// returns l's dedupe state and, when l tips the window over the
// threshold, the spike to report.
func (a *Alerter) observe(l Letter, key string) (*letterState, *spikeEvent) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if st, ok := a.seen.get(key); ok {
		return st, nil
	}
	st := a.seen.add(key)
	a.metrics.deadLetters.WithLabelValues(l.ErrorClass, l.SourceID).Inc()
	if l.Disposition == messages.DispositionEscalate {
		a.metrics.escalations.WithLabelValues(ruleLabel(l.ErrorCode)).Inc()
		a.log.Warn().Str("audit", "escalation").Str("dead_letter_id", l.DeadLetterID).Int64("outbox_id", l.OutboxID).
			Str("doc_id", l.DocID).Int("chunk_index", l.ChunkIndex).Str("source_id", l.SourceID).
			Str("source_native_id", l.SourceNativeID).Str("run_id", l.RunID).Str("error_class", l.ErrorClass).
			Str("rule", l.ErrorCode).Str("stage", l.Stage).Time("failed_at", l.FailedAt).Msg("escalation")
	}
	now := a.opts.Now()
	if !a.spike.add(now, l.FailedAt, l.SourceID, l.ErrorClass) {
		return st, nil
	}
	return st, a.spike.event(now, a.opts.SpikeTopN)
}

func (a *Alerter) delivered(st *letterState) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return st.delivered
}

func (a *Alerter) markDelivered(st *letterState) {
	a.mu.Lock()
	defer a.mu.Unlock()
	st.delivered = true
}

// parkedRecent is sluice_dlq_parked_recent, computed at scrape time so
// that it drains when dead letters stop arriving.
func (a *Alerter) parkedRecent() float64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return float64(a.spike.count(a.opts.Now()))
}

func (a *Alerter) sendSpike(ctx context.Context, s *spikeEvent) error {
	a.log.Warn().Int("count", s.Count).Int("threshold", s.Threshold).Str("window", s.Window).
		Interface("top_sources", s.TopSources).Interface("top_error_classes", s.TopErrorClasses).Msg("dead letter spike")
	body, err := json.Marshal(s)
	if err != nil {
		return err
	}
	return a.send(ctx, kindSpike, "spike:"+strconv.FormatInt(s.DetectedAt.UnixNano(), 10), body)
}

// send posts one event through the retry policy and records the outcome.
// It returns an error only when the event should be tried again later.
func (a *Alerter) send(ctx context.Context, kind, key string, body []byte) error {
	if a.opts.WebhookURL == "" {
		a.metrics.alertsSent.WithLabelValues(kind, outcomeLogOnly).Inc()
		return nil
	}
	reply, err := a.hook.Post(ctx, key, body)
	log := a.log.With().Str("kind", kind).Str("idempotency_key", key).Logger()
	switch {
	case err != nil:
		a.metrics.alertsSent.WithLabelValues(kind, outcomeFailed).Inc()
		log.Error().Err(err).Msg("alert webhook unreachable")
		return fmt.Errorf("post alert: %w", err)
	case reply.OK():
		a.metrics.alertsSent.WithLabelValues(kind, outcomeDelivered).Inc()
		return nil
	case webhook.Retried(webhook.Decision(reply, nil)):
		a.metrics.alertsSent.WithLabelValues(kind, outcomeFailed).Inc()
		log.Error().Int("status", reply.Status).Msg("alert webhook kept failing")
		return fmt.Errorf("post alert: webhook answered %d after %d retries", reply.Status, a.opts.MaxRetries)
	default:
		a.metrics.alertsSent.WithLabelValues(kind, outcomeRejected).Inc()
		log.Error().Int("status", reply.Status).Msg("alert webhook rejected the event; not retrying")
		return nil
	}
}

// idempotencyKey names one failure of one chunk. A letter without an
// outbox id falls back to its failure time, which is as unique as the
// failure itself.
func idempotencyKey(l Letter) string {
	if l.OutboxID > 0 {
		return l.DeadLetterID + ":" + strconv.FormatInt(l.OutboxID, 10)
	}
	return l.DeadLetterID + ":t" + strconv.FormatInt(l.FailedAt.UnixNano(), 10)
}

// ruleLabel keeps sluice_escalations_total's rule label non-empty.
func ruleLabel(rule string) string {
	if rule == "" {
		return "unknown"
	}
	return rule
}

// Kinds of alert event, the "kind" field and sluice_alerts_sent_total's
// kind label.
const (
	kindEscalation = "escalation"
	kindSpike      = "spike"
)

// escalationEvent is the webhook body for one escalated dead letter. It
// names the chunk and the rule, and deliberately has no field for text,
// payload or error detail.
type escalationEvent struct {
	Kind           string    `json:"kind"`
	DeadLetterID   string    `json:"dead_letter_id"`
	DocID          string    `json:"doc_id"`
	ChunkIndex     int       `json:"chunk_index"`
	SourceID       string    `json:"source_id"`
	SourceNativeID string    `json:"source_native_id"`
	RunID          string    `json:"run_id"`
	ErrorClass     string    `json:"error_class"`
	ErrorCode      string    `json:"error_code"`
	Stage          string    `json:"stage"`
	FailedAt       time.Time `json:"failed_at"`
	OutboxID       int64     `json:"outbox_id"`
}

func newEscalationEvent(l Letter) escalationEvent {
	return escalationEvent{
		Kind:           kindEscalation,
		DeadLetterID:   l.DeadLetterID,
		DocID:          l.DocID,
		ChunkIndex:     l.ChunkIndex,
		SourceID:       l.SourceID,
		SourceNativeID: l.SourceNativeID,
		RunID:          l.RunID,
		ErrorClass:     l.ErrorClass,
		ErrorCode:      l.ErrorCode,
		Stage:          l.Stage,
		FailedAt:       l.FailedAt.UTC(),
		OutboxID:       l.OutboxID,
	}
}

// letterState is what the alerter remembers of one dead letter.
type letterState struct {
	key       string
	delivered bool
}

// recentLetters is a bounded least-recently-used set of letter states:
// redeliveries come soon after the first delivery, so a bounded memory
// catches nearly all of them, and the receiver's idempotency key covers
// the rest.
type recentLetters struct {
	limit int
	order *list.List // of *letterState, most recent first
	byKey map[string]*list.Element
}

func newRecentLetters(limit int) *recentLetters {
	return &recentLetters{limit: max(limit, 1), order: list.New(), byKey: map[string]*list.Element{}}
}

func (r *recentLetters) get(key string) (*letterState, bool) {
	e, ok := r.byKey[key]
	if !ok {
		return nil, false
	}
	r.order.MoveToFront(e)
	return e.Value.(*letterState), true
}

func (r *recentLetters) add(key string) *letterState {
	st := &letterState{key: key}
	r.byKey[key] = r.order.PushFront(st)
	if r.order.Len() > r.limit {
		oldest := r.order.Back()
		r.order.Remove(oldest)
		delete(r.byKey, oldest.Value.(*letterState).key)
	}
	return st
}
