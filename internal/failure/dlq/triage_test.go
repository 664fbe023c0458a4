package dlq_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/sluicehq/sluice/internal/dev/testenv"
	"github.com/sluicehq/sluice/internal/failure/dlq"
	"github.com/sluicehq/sluice/internal/platform/policy"
	"github.com/sluicehq/sluice/pkg/messages"
)

type triageBundle struct {
	db     *testenv.Database
	reg    *prometheus.Registry
	triage *dlq.Triage
}

func setupTriage(t *testing.T) triageBundle {
	t.Helper()
	b := triageBundle{db: testenv.NewDatabase(t), reg: prometheus.NewRegistry()}
	b.triage = dlq.NewTriage(dlq.TriageConfig{}, dlq.TriageDeps{Pool: b.db.Pool, Log: zerolog.Nop(), Registry: b.reg})
	return b
}

func (b triageBundle) handle(t *testing.T, ls ...dlq.Letter) {
	t.Helper()
	for _, l := range ls {
		if res, err := b.triage.Handle(context.Background(), l); err != nil || res.Retry {
			t.Fatalf("handle outbox id %d: result %+v, err %v; want ack", l.OutboxID, res, err)
		}
	}
}

// deadLetterRow is the part of a dead_letters row the tests look at.
type deadLetterRow struct {
	attempts                    int
	lastOutboxID                int64
	errorClass, detail          string
	payload                     []byte
	firstFailed, lastFailed     time.Time
	replayID                    *string
	replayedAt, resolvedAt      *time.Time
	payloadPurgedAt             *time.Time
	disposition, sourceNativeID string
}

func (b triageBundle) row(t *testing.T, deadLetterID string) deadLetterRow {
	t.Helper()
	var r deadLetterRow
	var detail *string
	err := b.db.Pool.QueryRow(context.Background(), `
		SELECT attempts, last_outbox_id, error_class, error_detail, payload, first_failed_at, last_failed_at,
		       replay_id, replayed_at, resolved_at, payload_purged_at, disposition, source_native_id
		FROM dead_letters WHERE dead_letter_id = $1`, deadLetterID).Scan(
		&r.attempts, &r.lastOutboxID, &r.errorClass, &detail, &r.payload, &r.firstFailed, &r.lastFailed,
		&r.replayID, &r.replayedAt, &r.resolvedAt, &r.payloadPurgedAt, &r.disposition, &r.sourceNativeID)
	if err != nil {
		t.Fatalf("dead letter %s: %v", deadLetterID, err)
	}
	if detail != nil {
		r.detail = *detail
	}
	return r
}

// Every new failure of a chunk updates its one row; a redelivery and a
// late older failure change nothing.
func TestTriageKeepsOneRowPerChunkAndIgnoresRepeats(t *testing.T) {
	t.Parallel()
	b := setupTriage(t)
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

	first := newLetter("src", "doc", 3, 1, t0)
	first.Attempts = 3
	second := newLetter("src", "doc", 3, 2, t0.Add(time.Hour))
	second.Attempts = 2
	second.Disposition, second.ErrorClass = messages.DispositionRetry, "transient_exhausted"
	second.ErrorDetail = strings.Repeat("é", 5000)
	second.Payload = []byte{0xff, 0x00, '{', 0xfe, 0xff}
	b.handle(t, first)

	// An operator replayed and someone resolved the row; a new failure
	// must keep the replay bookkeeping and reopen the row.
	if _, err := b.db.Pool.Exec(context.Background(), `
		UPDATE dead_letters SET replay_id = 'rp-1', replayed_at = now(), resolved_at = now()`); err != nil {
		t.Fatal(err)
	}
	b.handle(t, second)
	want := b.row(t, first.DeadLetterID)

	redelivered := second
	redelivered.Delivered, redelivered.Attempts, redelivered.ErrorClass = 2, 7, "changed"
	late := first
	late.Delivered = 3
	b.handle(t, redelivered, late)

	got := b.row(t, first.DeadLetterID)
	if got.attempts != 5 || got.lastOutboxID != 2 || got.errorClass != "transient_exhausted" || got.disposition != "retry" {
		t.Errorf("row has attempts %d, last outbox id %d, %s/%s; want 5, 2, retry/transient_exhausted",
			got.attempts, got.lastOutboxID, got.disposition, got.errorClass)
	}
	if !got.firstFailed.Equal(t0) || !got.lastFailed.Equal(t0.Add(time.Hour)) {
		t.Errorf("failed %s … %s; want %s … %s", got.firstFailed, got.lastFailed, t0, t0.Add(time.Hour))
	}
	if n := utf8.RuneCountInString(got.detail); n != messages.MaxErrorDetailChars {
		t.Errorf("error_detail has %d characters; want it cut to %d", n, messages.MaxErrorDetailChars)
	}
	if !bytes.Equal(got.payload, second.Payload) {
		t.Errorf("payload %x; want %x byte for byte", got.payload, second.Payload)
	}
	if got.replayID == nil || *got.replayID != "rp-1" || got.replayedAt == nil {
		t.Errorf("replay bookkeeping lost: replay_id %v, replayed_at %v", got.replayID, got.replayedAt)
	}
	if got.resolvedAt != nil {
		t.Errorf("resolved_at %v after a new failure; want NULL", got.resolvedAt)
	}
	if got.attempts != want.attempts || got.detail != want.detail || !got.lastFailed.Equal(want.lastFailed) {
		t.Errorf("redelivery or late letter changed the row")
	}
	if n := countRows(t, b.db, `SELECT count(*) FROM dead_letters`); n != 1 {
		t.Errorf("%d rows; want one per chunk", n)
	}
	for outcome, want := range map[string]float64{"inserted": 1, "updated": 1, "skipped": 2} {
		if got, _ := metricValue(t, b.reg, "sluice_dlq_triaged_total", map[string]string{"outcome": outcome}); got != want {
			t.Errorf("sluice_dlq_triaged_total{outcome=%q} = %v; want %v", outcome, got, want)
		}
	}
}

// A letter without an outbox id is recorded for a chunk with no row, and
// never overrides or survives a letter with a real id.
func TestTriageLetterWithoutOutboxID(t *testing.T) {
	t.Parallel()
	b := setupTriage(t)
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

	anonymous := newLetter("src", "doc", 0, 0, t0)
	b.handle(t, anonymous)
	if r := b.row(t, anonymous.DeadLetterID); r.attempts != 1 || r.lastOutboxID != 0 {
		t.Fatalf("anonymous letter recorded as attempts %d, outbox id %d; want 1, 0", r.attempts, r.lastOutboxID)
	}
	withID := newLetter("src", "doc", 0, 9, t0.Add(time.Minute))
	withID.ErrorClass = "unprocessable"
	b.handle(t, withID)
	again := anonymous
	again.ErrorClass = "later_anonymous"
	b.handle(t, again)
	if r := b.row(t, anonymous.DeadLetterID); r.lastOutboxID != 9 || r.errorClass != "unprocessable" || r.attempts != 2 {
		t.Errorf("row is outbox id %d, class %s, attempts %d; want the real letter's 9, unprocessable, 2",
			r.lastOutboxID, r.errorClass, r.attempts)
	}
}

// A dead letter whose chunk the manifest already shows stored at its
// version or later is recorded resolved; one stored only at an older
// version is not.
func TestTriageResolvesChunkAlreadyStored(t *testing.T) {
	t.Parallel()
	b := setupTriage(t)
	ctx := context.Background()
	stored := newLetter("src", "doc", 0, 1, time.Now())
	stored.DocVersion = 2
	stale := newLetter("src", "doc", 1, 2, time.Now())
	stale.DocVersion = 3
	if _, err := b.db.Pool.Exec(ctx, `
		INSERT INTO documents (doc_id, source_id, source_native_id, version, content_hash, chunk_count, status)
		VALUES ($1, 'src', 'doc', 3, 'h', 2, 'ready')`, stored.DocID); err != nil {
		t.Fatal(err)
	}
	if _, err := b.db.Pool.Exec(ctx, `
		INSERT INTO ingest_manifest (doc_id, chunk_index, version, content_hash, status, job)
		VALUES ($1, 0, 3, 'h0', 'stored', '\x00'), ($1, 1, 2, 'h1', 'stored', '\x00')`, stored.DocID); err != nil {
		t.Fatal(err)
	}
	b.handle(t, stored, stale)
	if r := b.row(t, stored.DeadLetterID); r.resolvedAt == nil {
		t.Error("chunk stored at a newer version: dead letter left unresolved")
	}
	if r := b.row(t, stale.DeadLetterID); r.resolvedAt != nil {
		t.Errorf("chunk stored only at an older version: dead letter resolved at %v", r.resolvedAt)
	}
}

// The depth gauges count unresolved rows at scrape time; ready to replay
// counts every class the replayer replays, timeout_exhausted included.
func TestTriageDepthGauges(t *testing.T) {
	t.Parallel()
	b := setupTriage(t)
	now := time.Now()
	past, future := now.Add(-time.Minute), now.Add(time.Hour)
	retryAs := func(class, native string, id int64, at time.Time) dlq.Letter {
		l := newLetter("src", native, 0, id, now)
		l.Disposition, l.ErrorClass, l.NextRetryAt = messages.DispositionRetry, class, &at
		return l
	}
	retry := func(native string, id int64, at time.Time) dlq.Letter {
		return retryAs("transient_exhausted", native, id, at)
	}
	b.handle(t, retry("a", 1, past), retry("b", 2, past), retry("c", 3, future),
		newLetter("src", "d", 0, 4, now), retry("e", 5, past),
		retryAs("timeout_exhausted", "f", 6, past), retryAs("timeout_exhausted", "g", 7, future))
	if _, err := b.db.Pool.Exec(context.Background(), `UPDATE dead_letters SET resolved_at = now() WHERE last_outbox_id = 5`); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"sluice_dlq_depth", map[string]string{"disposition": "retry", "error_class": "transient_exhausted"}, 3},
		{"sluice_dlq_depth", map[string]string{"disposition": "quarantine", "error_class": "bad_request"}, 1},
		{"sluice_dlq_depth", map[string]string{"disposition": "retry", "error_class": "timeout_exhausted"}, 2},
		{"sluice_dlq_ready_to_replay", nil, 3},
		{"sluice_dlq_stats_up", nil, 1},
	} {
		if got, found := metricValue(t, b.reg, c.name, c.labels); !found || got != c.want {
			t.Errorf("%s%v = %v (found %v); want %v", c.name, c.labels, got, found, c.want)
		}
	}
}

// Retention nulls old payloads only and keeps the rest of the row.
func TestTriagePurgePayloads(t *testing.T) {
	t.Parallel()
	b := setupTriage(t)
	ctx := context.Background()
	old := newLetter("src", "old", 0, 1, time.Now().Add(-100*24*time.Hour))
	old.Attempts = 4
	recent := newLetter("src", "recent", 0, 2, time.Now().Add(-24*time.Hour))
	b.handle(t, old, recent)

	n, err := b.triage.PurgePayloads(ctx, time.Now(), 100)
	if err != nil || n != 1 {
		t.Fatalf("purged %d, err %v; want the one row past 90 days", n, err)
	}
	if r := b.row(t, old.DeadLetterID); r.payload != nil || r.payloadPurgedAt == nil || r.attempts != 4 || r.errorClass != "bad_request" {
		t.Errorf("old row: payload %q, purged at %v, attempts %d, class %s; want payload gone, the rest kept",
			r.payload, r.payloadPurgedAt, r.attempts, r.errorClass)
	}
	if r := b.row(t, recent.DeadLetterID); !bytes.Equal(r.payload, recent.Payload) || r.payloadPurgedAt != nil {
		t.Errorf("recent row lost its payload")
	}
	if n, err := b.triage.PurgePayloads(ctx, time.Now(), 100); err != nil || n != 0 {
		t.Errorf("second purge: %d rows, err %v; want nothing left to purge", n, err)
	}
	if n, err := b.triage.PurgePayloads(ctx, time.Now().Add(90*24*time.Hour), 100); err != nil || n != 1 {
		t.Errorf("purge 90 days later: %d rows, err %v; want the recent row", n, err)
	}
}

// Escalations are chain-of-custody records: the payload purge leaves them
// alone until the escalation retention, which defaults to the mandate,
// and a source's policy sets its own payload retention.
func TestTriageRetentionFollowsPolicyAndSparesEscalations(t *testing.T) {
	t.Parallel()
	db := testenv.NewDatabase(t)
	defaults := policy.Settings{MaxDeliveries: 5, AmbiguousRetries: 2, BackoffBase: time.Second, BackoffMax: time.Minute,
		BreakerFailures: 5, BreakerDelay: time.Second, SoftTimeLimit: time.Minute, HaltMinChunks: 1,
		PayloadRetention: policy.DefaultPayloadRetention, EscalationRetention: policy.DefaultEscalationRetention}
	table, err := policy.Parse("p.yaml", []byte("sources:\n  short:\n    retention: {dead_letter_payloads: 7d}\n"), defaults, policy.DefaultRetentionMandate)
	if err != nil {
		t.Fatal(err)
	}
	b := triageBundle{db: db, reg: prometheus.NewRegistry()}
	b.triage = dlq.NewTriage(dlq.TriageConfig{Policy: table}, dlq.TriageDeps{Pool: db.Pool, Log: zerolog.Nop(), Registry: b.reg})
	escalated := newLetter("src", "escalated", 0, 1, time.Now().Add(-400*24*time.Hour))
	escalated.Disposition, escalated.ErrorClass = messages.DispositionEscalate, "policy_violation"
	quarantined := newLetter("src", "quarantined", 0, 2, time.Now().Add(-100*24*time.Hour))
	shortLived := newLetter("short", "week-old", 0, 3, time.Now().Add(-8*24*time.Hour))
	fresh := newLetter("src", "fresh", 0, 4, time.Now().Add(-8*24*time.Hour))
	b.handle(t, escalated, quarantined, shortLived, fresh)

	if n, err := b.triage.PurgePayloads(context.Background(), time.Now(), 100); err != nil || n != 2 {
		t.Fatalf("purged %d, err %v; want the 100-day quarantine and the 8-day row of the 7-day source", n, err)
	}
	for _, c := range []struct {
		l    dlq.Letter
		kept bool
	}{{escalated, true}, {quarantined, false}, {shortLived, false}, {fresh, true}} {
		if r := b.row(t, c.l.DeadLetterID); (r.payload != nil) != c.kept {
			t.Errorf("%s: payload kept = %v, want %v", c.l.SourceNativeID, r.payload != nil, c.kept)
		}
	}
}
