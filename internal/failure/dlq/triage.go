package dlq

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/sluicehq/sluice/internal/platform/policy"
	"github.com/sluicehq/sluice/internal/store/deadletter"
)

// TriageConfig configures a Triage. The zero value gives the defaults.
type TriageConfig struct {
	// PayloadRetention is how long a dead letter's payload is kept after
	// its last failure, for sources without a policy of their own, and
	// how long the DLQ stream's by-reference payloads are kept. It
	// matches the DLQ stream's MaxAge, so a payload outlives the message
	// it came from by nothing. Defaults to 90 days.
	PayloadRetention time.Duration
	// Timeout bounds the database work for one dead letter. Consume hands
	// handlers a context that outlives shutdown (so in-flight work can
	// finish); this keeps a hung database from holding shutdown forever.
	// Defaults to 30s.
	Timeout time.Duration
	// EscalationRetention is how long an escalation's payload is kept: the
	// escalation's chain-of-custody record. Defaults to
	// policy.DefaultEscalationRetention (2555 days).
	EscalationRetention time.Duration
	// HistoryRetention is how long each event of a dead letter's history
	// is kept; an escalation's follow EscalationRetention. Defaults to
	// policy.DefaultHistoryRetention (365 days).
	HistoryRetention time.Duration
	// Policy, when set, gives each source its own retention; its default
	// section replaces PayloadRetention, EscalationRetention and
	// HistoryRetention.
	Policy *policy.Table
}

// DefaultPayloadRetention is TriageConfig.PayloadRetention's default: a
// quarter, long enough to see a pattern and replay, and equal to the DLQ
// stream's default MaxAge.
const DefaultPayloadRetention = policy.DefaultPayloadRetention

const defaultTriageTimeout = 30 * time.Second

func (o *TriageConfig) applyDefaults() {
	if o.Policy != nil {
		def := o.Policy.Default()
		o.PayloadRetention, o.EscalationRetention, o.HistoryRetention = def.PayloadRetention, def.EscalationRetention, def.HistoryRetention
	}
	if o.PayloadRetention <= 0 {
		o.PayloadRetention = DefaultPayloadRetention
	}
	if o.EscalationRetention <= 0 {
		o.EscalationRetention = policy.DefaultEscalationRetention
	}
	if o.HistoryRetention <= 0 {
		o.HistoryRetention = policy.DefaultHistoryRetention
	}
	if o.Timeout <= 0 {
		o.Timeout = defaultTriageTimeout
	}
}

// Validate says what is wrong with the options and how to fix it. Zero
// fields take their defaults.
func (o TriageConfig) Validate() error {
	var errs []error
	if o.PayloadRetention < 0 || o.EscalationRetention < 0 || o.HistoryRetention < 0 {
		errs = append(errs, fmt.Errorf("triage: payload retention %s, escalation retention %s and history retention %s: use positive durations, or 0 for the defaults", o.PayloadRetention, o.EscalationRetention, o.HistoryRetention))
	}
	if o.Timeout < 0 {
		errs = append(errs, fmt.Errorf("triage: timeout %s: use a positive duration, or 0 for the default (%s)", o.Timeout, defaultTriageTimeout))
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
	opts    TriageConfig
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
func NewTriage(opts TriageConfig, deps TriageDeps) *Triage {
	opts.applyDefaults()
	t := &Triage{pool: deps.Pool, log: deps.Log, opts: opts, metrics: newTriageMetrics()}
	if deps.Registry != nil {
		deps.Registry.MustRegister(t.metrics.triaged, newDepthCollector(deps.Pool, deps.Log))
	}
	return t
}

// Handle records l in dead_letters. It is a Handler. It fails only when
// the database does, and then the message is redelivered; a redelivery is
// harmless.
func (t *Triage) Handle(ctx context.Context, l Letter) (Result, error) {
	ctx, cancel := context.WithTimeout(ctx, t.opts.Timeout)
	defer cancel()
	outcome, resolved, err := deadletter.Record(ctx, t.pool, l.DeadLetter, l.OutboxID)
	if err != nil {
		return Result{}, fmt.Errorf("triage: %w", err)
	}
	t.metrics.triaged.WithLabelValues(outcome).Inc()
	t.log.Debug().Str("dead_letter_id", l.DeadLetterID).Str("doc_id", l.DocID).Int("chunk_index", l.ChunkIndex).
		Str("source_id", l.SourceID).Str("run_id", l.RunID).Int64("outbox_id", l.OutboxID).Str("error_class", l.ErrorClass).Str("outcome", outcome).
		Bool("resolved", resolved).Msg("dead letter triaged")
	return Result{}, nil
}
