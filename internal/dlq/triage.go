package dlq

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/sluicehq/sluice/internal/manifest"
	"github.com/sluicehq/sluice/internal/policy"
	"github.com/sluicehq/sluice/pkg/messages"
)

// TriageOptions configures a Triage. The zero value gives the defaults.
type TriageOptions struct {
	// PayloadRetention is how long a dead letter's payload is kept after
	// its last failure; PurgePayloads called with 0 purges past it. It
	// matches the DLQ stream's MaxAge, so a payload outlives the message
	// it came from by nothing. Defaults to 90 days.
	PayloadRetention time.Duration
	// Timeout bounds the database work for one dead letter. Consume hands
	// handlers a context that outlives shutdown (so in-flight work can
	// finish); this keeps a hung database from holding shutdown forever.
	// Defaults to 30s.
	Timeout time.Duration
	// EscalationRetention is how long an escalation's payload is kept: the
	// chain-of-custody record seed 004's mandate protects. Defaults to
	// policy.DefaultEscalationRetention (2555 days).
	EscalationRetention time.Duration
	// Policy, when set, gives each source its own retention; its default
	// section replaces PayloadRetention and EscalationRetention.
	Policy *policy.Table
	// PurgeBatch is how many rows one PurgePayloads statement updates, so
	// a large first purge never holds row locks that triage waits on for
	// long. Defaults to 5,000.
	PurgeBatch int
}

// DefaultPayloadRetention is TriageOptions.PayloadRetention's default: a
// quarter, long enough to see a pattern and replay, and equal to the DLQ
// stream's default MaxAge.
const DefaultPayloadRetention = policy.DefaultPayloadRetention

const (
	defaultTriageTimeout = 30 * time.Second
	defaultPurgeBatch    = 5000
)

func (o *TriageOptions) applyDefaults() {
	if o.Policy != nil {
		o.PayloadRetention, o.EscalationRetention = o.Policy.Default().PayloadRetention, o.Policy.Default().EscalationRetention
	}
	if o.PayloadRetention <= 0 {
		o.PayloadRetention = DefaultPayloadRetention
	}
	if o.EscalationRetention <= 0 {
		o.EscalationRetention = policy.DefaultEscalationRetention
	}
	if o.Timeout <= 0 {
		o.Timeout = defaultTriageTimeout
	}
	if o.PurgeBatch <= 0 {
		o.PurgeBatch = defaultPurgeBatch
	}
}

// Validate says what is wrong with the options and how to fix it. Zero
// fields take their defaults.
func (o TriageOptions) Validate() error {
	var errs []error
	if o.PayloadRetention < 0 || o.EscalationRetention < 0 {
		errs = append(errs, fmt.Errorf("triage: payload retention %s and escalation retention %s: use positive durations, or 0 for the defaults", o.PayloadRetention, o.EscalationRetention))
	}
	if o.Timeout < 0 {
		errs = append(errs, fmt.Errorf("triage: timeout %s: use a positive duration, or 0 for the default (%s)", o.Timeout, defaultTriageTimeout))
	}
	if o.PurgeBatch < 0 {
		errs = append(errs, fmt.Errorf("triage: purge batch %d: use at least 1, or 0 for the default (%d)", o.PurgeBatch, defaultPurgeBatch))
	}
	if o.Policy == nil && o.PayloadRetention > 0 && o.EscalationRetention > 0 && o.EscalationRetention < o.PayloadRetention {
		errs = append(errs, fmt.Errorf("triage: escalation retention %s is below payload retention %s: keep escalations at least as long", o.EscalationRetention, o.PayloadRetention))
	}
	return errors.Join(errs...)
}

// Triage is the DLQ consumer that keeps the dead_letters table: one row
// per chunk, for humans (sluice dlq ls|show|report) and for operator
// replays. Postgres, not the stream, is what people query, so the table
// must converge to the latest failure of every chunk whatever the order and
// number of deliveries.
//
// Ordering comes from the outbox id (Letter.OutboxID): it grows with every
// dead letter written, so the row keeps the failure with the highest id it
// has seen. A redelivery (same id) or a late older failure (lower id)
// changes nothing, which makes Handle idempotent.
//
// A letter without an outbox id (OutboxID 0: published by something other
// than the relay, or with its Nats-Msg-Id stripped) cannot be ordered. It
// is recorded when its chunk has no row yet, with last_outbox_id 0, so that
// it is triageable rather than lost, and otherwise ignored: any letter with
// a real id supersedes it, and it supersedes nothing.
//
// Triage is safe for concurrent use.
type Triage struct {
	pool    *pgxpool.Pool
	log     zerolog.Logger
	opts    TriageOptions
	metrics *triageMetrics
}

// TriageDeps are what a Triage works with.
type TriageDeps struct {
	// Pool holds the dead_letters table. Required.
	Pool *pgxpool.Pool
	// Log receives triage's events.
	Log zerolog.Logger
	// Registry receives triage's metrics. Nil for none.
	Registry prometheus.Registerer
}

// NewTriage returns a Triage writing to deps.Pool. It registers
// sluice_dlq_triaged_total and the scrape-time gauges sluice_dlq_depth,
// sluice_dlq_ready_to_replay and sluice_dlq_stats_up on deps.Registry
// (nil for none), and panics if they are already registered there.
func NewTriage(opts TriageOptions, deps TriageDeps) *Triage {
	opts.applyDefaults()
	t := &Triage{pool: deps.Pool, log: deps.Log, opts: opts, metrics: newTriageMetrics()}
	if deps.Registry != nil {
		deps.Registry.MustRegister(t.metrics.triaged, newDepthCollector(deps.Pool, deps.Log))
	}
	return t
}

// upsertDeadLetter records one failure. The conflict clause is the whole
// idempotency story: only a strictly newer outbox id touches an existing
// row. A chunk the manifest already shows stored at this version or later
// (the replayer can store it before triage sees the dead letter) is
// recorded as resolved at once; any other new failure unresolves the row.
// replayed_at and replay_id belong to the operator's replay bookkeeping and
// are never touched here.
const upsertDeadLetter = `
INSERT INTO dead_letters (
	dead_letter_id, doc_id, chunk_index, version, source_id, source_native_id, run_id,
	disposition, error_class, error_code, error_detail, stage, attempts, replay_gen,
	payload, last_outbox_id, first_failed_at, last_failed_at, next_retry_at, resolved_at)
VALUES (
	$1, $2, $3, $4::bigint, $5, $6, NULLIF($7, ''),
	$8, $9, NULLIF($10, ''), $11, $12, $13, $14,
	$15, $16, $17, $17, $18,
	CASE WHEN $4::bigint > 0 AND EXISTS (
		SELECT 1 FROM ingest_manifest m
		WHERE m.doc_id = $2 AND m.chunk_index = $3 AND m.status = ` + manifest.SQLStored + ` AND m.version >= $4::bigint)
	THEN now() END)
ON CONFLICT (doc_id, chunk_index) DO UPDATE SET
	version           = EXCLUDED.version,
	source_id         = EXCLUDED.source_id,
	source_native_id  = COALESCE(NULLIF(EXCLUDED.source_native_id, ''), dead_letters.source_native_id),
	run_id            = EXCLUDED.run_id,
	disposition       = EXCLUDED.disposition,
	error_class       = EXCLUDED.error_class,
	error_code        = EXCLUDED.error_code,
	error_detail      = EXCLUDED.error_detail,
	stage             = EXCLUDED.stage,
	attempts          = dead_letters.attempts + EXCLUDED.attempts,
	replay_gen        = EXCLUDED.replay_gen,
	payload           = EXCLUDED.payload,
	payload_purged_at = NULL,
	last_outbox_id    = EXCLUDED.last_outbox_id,
	last_failed_at    = EXCLUDED.last_failed_at,
	next_retry_at     = EXCLUDED.next_retry_at,
	resolved_at       = EXCLUDED.resolved_at
WHERE dead_letters.last_outbox_id < EXCLUDED.last_outbox_id
RETURNING xmax = 0, resolved_at IS NOT NULL`

// Handle records l in dead_letters. It is a Handler. It fails only when
// the database does, and then the message is redelivered; a redelivery is
// harmless.
func (t *Triage) Handle(ctx context.Context, l Letter) (Result, error) {
	ctx, cancel := context.WithTimeout(ctx, t.opts.Timeout)
	defer cancel()
	payload := l.Payload
	if payload == nil {
		// NULL is reserved for "purged by retention" (payload_purged_at
		// says when); an empty job is kept as empty bytes.
		payload = []byte{}
	}
	var inserted, resolved bool
	err := t.pool.QueryRow(ctx, upsertDeadLetter,
		l.DeadLetterID, l.DocID, l.ChunkIndex, l.DocVersion, l.SourceID, l.SourceNativeID, l.RunID,
		l.Disposition, l.ErrorClass, l.ErrorCode, messages.TruncateDetail(l.ErrorDetail), l.Stage,
		max(l.Attempts, 1), l.ReplayGen, payload, max(l.OutboxID, 0), l.FailedAt.UTC(), l.NextRetryAt,
	).Scan(&inserted, &resolved)
	outcome := "updated"
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		outcome = "skipped"
	case err != nil:
		return Result{}, fmt.Errorf("triage dead letter %s: %w", l.DeadLetterID, err)
	case inserted:
		outcome = "inserted"
	}
	t.metrics.triaged.WithLabelValues(outcome).Inc()
	t.log.Debug().Str("dead_letter_id", l.DeadLetterID).Str("doc_id", l.DocID).Int("chunk_index", l.ChunkIndex).
		Int64("outbox_id", l.OutboxID).Str("error_class", l.ErrorClass).Str("outcome", outcome).
		Bool("resolved", resolved).Msg("dead letter triaged")
	return Result{}, nil
}

// PurgePayloads enforces payload retention: rows whose last failure is
// older than their retention lose their payload (payload_purged_at
// records when) and keep everything else — counts, classes and times
// stay for trend reports. A row's retention is its source's policy, else
// olderThan, else TriageOptions.PayloadRetention; an escalation's is the
// escalation retention, which the policy never lets fall below the
// retention mandate. It returns how many rows it purged, and is safe to
// call while triage runs and from several replicas. A purged unresolved
// row can no longer be replayed from Postgres; by then its DLQ message
// has aged out too.
func (t *Triage) PurgePayloads(ctx context.Context, olderThan time.Duration) (int64, error) {
	if olderThan <= 0 {
		olderThan = t.opts.PayloadRetention
	}
	var sources []string
	var payloadSecs, escalationSecs []float64
	if t.opts.Policy != nil {
		for _, src := range t.opts.Policy.Sources() {
			s := t.opts.Policy.For(src)
			sources = append(sources, src)
			payloadSecs, escalationSecs = append(payloadSecs, s.PayloadRetention.Seconds()), append(escalationSecs, s.EscalationRetention.Seconds())
		}
	}
	var total int64
	for {
		// SKIP LOCKED: a row triage is updating right now is getting a
		// fresh failure, so it is not due for purging anyway.
		tag, err := t.pool.Exec(ctx, `
			UPDATE dead_letters SET payload = NULL, payload_purged_at = now()
			WHERE dead_letter_id IN (
				SELECT d.dead_letter_id FROM dead_letters d
				LEFT JOIN unnest($1::text[], $2::float8[], $3::float8[]) AS p(source_id, payload_secs, escalation_secs)
				       ON p.source_id = d.source_id
				WHERE d.payload IS NOT NULL AND d.last_failed_at < now() - make_interval(secs => CASE
				      WHEN d.disposition = 'escalate' THEN coalesce(p.escalation_secs, $4)
				      ELSE coalesce(p.payload_secs, $5) END)
				LIMIT $6 FOR UPDATE OF d SKIP LOCKED)`,
			sources, payloadSecs, escalationSecs, t.opts.EscalationRetention.Seconds(), olderThan.Seconds(), t.opts.PurgeBatch)
		if err != nil {
			return total, fmt.Errorf("purge dead letter payloads: %w", err)
		}
		total += tag.RowsAffected()
		if tag.RowsAffected() < int64(t.opts.PurgeBatch) {
			break
		}
	}
	if total > 0 {
		t.log.Info().Int64("rows", total).Dur("older_than", olderThan).Msg("dead letter payloads purged")
	}
	return total, nil
}
