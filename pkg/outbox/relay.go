package outbox

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/failsafe-go/failsafe-go"
	"github.com/failsafe-go/failsafe-go/retrypolicy"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/sluicehq/sluice/pkg/classify"
	"github.com/sluicehq/sluice/pkg/messages"
	"github.com/sluicehq/sluice/pkg/puback"
)

// RelayConfig tunes a relay.
type RelayConfig struct {
	// BatchSize is how many rows one claim takes. Defaults to
	// DefaultRelayBatchSize.
	BatchSize int
	// PollInterval is the fallback when no notification arrives. Defaults
	// to DefaultPollInterval.
	PollInterval time.Duration
	// MaxBackoff caps the wait between attempts while NATS or PostgreSQL is
	// down, and a refused row's own backoff. Defaults to DefaultMaxBackoff.
	MaxBackoff time.Duration
	// Retention is how long published rows are kept before deletion.
	// Defaults to DefaultRetention.
	Retention time.Duration
}

// Defaults of RelayConfig, read by the outbox-relay's flags too.
const (
	DefaultRelayBatchSize = 256
	DefaultPollInterval   = time.Second
	DefaultMaxBackoff     = 10 * time.Second
	DefaultRetention      = 7 * 24 * time.Hour
)

func (c *RelayConfig) applyDefaults() {
	if c.BatchSize == 0 {
		c.BatchSize = DefaultRelayBatchSize
	}
	if c.PollInterval == 0 {
		c.PollInterval = DefaultPollInterval
	}
	if c.MaxBackoff == 0 {
		c.MaxBackoff = DefaultMaxBackoff
	}
	if c.Retention == 0 {
		c.Retention = DefaultRetention
	}
}

// Validate says what is wrong with the configuration and how to fix it.
// Zero fields take their defaults.
func (c RelayConfig) Validate() error {
	c.applyDefaults()
	var errs []error
	if c.BatchSize < 1 {
		errs = append(errs, fmt.Errorf("relay batch size %d: use at least 1 (0 for the default, %d)", c.BatchSize, DefaultRelayBatchSize))
	}
	if c.PollInterval <= 0 {
		errs = append(errs, fmt.Errorf("relay poll interval %s: use a positive duration such as 1s", c.PollInterval))
	}
	if c.MaxBackoff <= 0 {
		errs = append(errs, fmt.Errorf("relay max backoff %s: use a positive duration such as 10s", c.MaxBackoff))
	}
	if c.Retention <= 0 {
		errs = append(errs, fmt.Errorf("outbox retention %s: use a positive duration such as 168h", c.Retention))
	}
	return errors.Join(errs...)
}

// Relay publishes outbox rows to JetStream. Several relays may run at
// once: each claims rows with FOR UPDATE SKIP LOCKED, and a row is marked
// published in the transaction that claimed it, after its PubAck.
type Relay struct {
	cfg  RelayConfig
	pool *pgxpool.Pool
	log  zerolog.Logger
	// sender publishes to DLQ and reads the PubAcks.
	sender *puback.Sender
	crash  func(string)

	published prometheus.Counter
	refused   prometheus.Counter
	pending   prometheus.Gauge
	oldest    prometheus.Gauge
}

// RelayDeps are what a Relay works with.
type RelayDeps struct {
	// Pool holds the outbox table. Required.
	Pool *pgxpool.Pool
	// JS publishes the rows. Required.
	JS jetstream.JetStream
	// Log receives the relay's events.
	Log zerolog.Logger
	// Registry receives the relay's metrics. Nil for none.
	Registry prometheus.Registerer
	// Crash is called at the crash point "after-publish-before-mark". Nil
	// for none.
	Crash func(string)
}

// NewRelay returns a relay.
func NewRelay(cfg RelayConfig, deps RelayDeps) *Relay {
	cfg.applyDefaults()
	crash := deps.Crash
	if crash == nil {
		crash = func(string) {}
	}
	r := &Relay{cfg: cfg, pool: deps.Pool, log: deps.Log, crash: crash,
		sender:    puback.NewSender(deps.JS, messages.DLQStream),
		published: prometheus.NewCounter(prometheus.CounterOpts{Name: "sluice_outbox_published_total", Help: "Outbox rows published to JetStream."}),
		refused:   prometheus.NewCounter(prometheus.CounterOpts{Name: "sluice_outbox_refused_total", Help: "Outbox rows the relay refused to publish: not a well-formed dead letter on its own DLQ subject."}),
		pending:   prometheus.NewGauge(prometheus.GaugeOpts{Name: "sluice_outbox_pending_rows", Help: "Outbox rows not yet published."}),
		oldest:    prometheus.NewGauge(prometheus.GaugeOpts{Name: "sluice_outbox_oldest_age_seconds", Help: "Age of the oldest unpublished outbox row."}),
	}
	if deps.Registry != nil {
		deps.Registry.MustRegister(r.published, r.refused, r.pending, r.oldest)
	}
	return r
}

// Run relays until ctx ends, riding out NATS and PostgreSQL being away.
// It returns early only on a failure pkg/classify calls permanent, which
// no retry would clear (see relayAgain).
func (r *Relay) Run(ctx context.Context) error {
	wake := make(chan struct{}, 1)
	go r.listen(ctx, wake)
	relay := failsafe.With(r.backoff(ctx)).WithContext(ctx)
	lastPurge := time.Time{}
	for ctx.Err() == nil {
		n, err := relay.Get(func() (int, error) { return r.RelayOnce(ctx) })
		if errors.Is(err, ErrPublish) && ctx.Err() == nil {
			// Each refused row backs off on its own; the rows behind
			// it are claimed at once.
			r.log.Warn().Err(err).Msg("outbox rows refused; each backs off on its own")
			continue
		}
		if err != nil && ctx.Err() == nil {
			return fmt.Errorf("outbox relay: %w", err)
		}
		if err != nil {
			return nil // ctx ended while backing off
		}
		if time.Since(lastPurge) > time.Minute {
			if err := r.purge(ctx); err != nil {
				r.log.Warn().Err(err).Msg("outbox retention")
			}
			r.gauge(ctx)
			lastPurge = time.Now()
		}
		if n == r.cfg.BatchSize {
			continue
		}
		r.gauge(ctx)
		r.pause(ctx, wake)
	}
	return nil
}

// backoff retries a RelayOnce that failed for want of NATS or PostgreSQL,
// with capped exponential backoff, until ctx ends, as relayAgain decides.
func (r *Relay) backoff(ctx context.Context) retrypolicy.RetryPolicy[int] {
	return retrypolicy.NewBuilder[int]().
		HandleIf(func(_ int, err error) bool { return relayAgain(err) }).
		AbortIf(func(int, error) bool { return ctx.Err() != nil }).
		WithMaxRetries(-1).
		WithBackoff(min(minBackoff, r.cfg.MaxBackoff), r.cfg.MaxBackoff).
		OnRetryScheduled(func(e failsafe.ExecutionScheduledEvent[int]) {
			r.log.Warn().Err(e.LastError()).Dur("backoff", e.Delay).Msg("relay failed; backing off")
		}).
		Build()
}

// relayAgain reports whether a RelayOnce that failed with err is tried
// again after a backoff, by pkg/classify's decision: a transient failure
// (a connection lost, a timeout, a serialization failure) and an
// ambiguous one (a deployment fault such as a missing migration, the same
// for every row, which clears once fixed) are; a permanent one is not,
// and Run returns it. Refused rows (ErrPublish) are not retried here:
// each backs off on its own.
func relayAgain(err error) bool {
	if err == nil || errors.Is(err, ErrPublish) {
		return false
	}
	switch classify.Classify(err).Disposition {
	case classify.Retry, classify.Ambiguous:
		return true
	}
	return false
}

// minBackoff is the relay's first wait after a failure.
const minBackoff = 100 * time.Millisecond

// claimed is one outbox row claimed for publishing.
type claimed struct {
	id  int64
	msg *nats.Msg
	// refused, when set, is why the row is not a dead letter the relay
	// publishes (messages.CheckDLQMessage).
	refused error
}

// RelayOnce claims one batch of due rows, publishes it and marks what
// JetStream acknowledged. It returns how many rows it published, and an
// error matching ErrPublish when some rows were refused (those back off
// on their own), or another error when PostgreSQL failed.
//
// A row whose deduplicated PubAck names a message gone from DLQ
// (puback.ErrGone) failed: it backs off like any failed row and is
// published once the duplicate window has passed. It is never sent under
// another Nats-Msg-Id, since triage reads the outbox id from it.
func (r *Relay) RelayOnce(ctx context.Context) (int, error) {
	tx, err := r.pool.Begin(ctx)
	if err != nil {
		return 0, fmt.Errorf("begin: %w", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	rows, err := r.claim(ctx, tx)
	if err != nil || len(rows) == 0 {
		return 0, err
	}
	var o outcome
	var send []*claimed
	var msgs []*nats.Msg
	for _, rw := range rows {
		if rw.refused != nil {
			o.refuse(rw, r.log)
			continue
		}
		send, msgs = append(send, rw), append(msgs, rw.msg)
	}
	acks, err := r.sender.Send(ctx, msgs)
	if err != nil {
		return 0, err
	}
	for i, a := range acks {
		if a.Err != nil {
			o.fail(send[i].id, a.Err)
		} else {
			o.done = append(o.done, send[i].id)
		}
	}
	r.crash("after-publish-before-mark")
	if err := r.mark(ctx, tx, o); err != nil {
		return 0, err
	}
	r.published.Add(float64(len(o.done)))
	r.refused.Add(float64(len(o.refused)))
	if len(o.errs) == 0 {
		return len(o.done), nil
	}
	return len(o.done), fmt.Errorf("%w: %d of %d rows: %w", ErrPublish, len(o.failed), len(rows), errors.Join(o.errs...))
}

// claim locks up to BatchSize due rows in tx and builds their messages.
func (r *Relay) claim(ctx context.Context, tx pgx.Tx) ([]*claimed, error) {
	rows, err := tx.Query(ctx, `
		SELECT id, subject, msg_id, headers, payload::text FROM outbox
		WHERE published_at IS NULL AND refused_at IS NULL AND (next_attempt_at IS NULL OR next_attempt_at <= now())
		ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED`, r.cfg.BatchSize)
	if err != nil {
		return nil, fmt.Errorf("claim: %w", err)
	}
	defer rows.Close()
	var out []*claimed
	for rows.Next() {
		var rw claimed
		var subject, msgID, payload string
		var headers map[string]string
		if err := rows.Scan(&rw.id, &subject, &msgID, &headers, &payload); err != nil {
			return nil, fmt.Errorf("claim: %w", err)
		}
		rw.msg = &nats.Msg{Subject: subject, Data: []byte(payload), Header: nats.Header{}}
		rw.refused = messages.CheckDLQMessage(subject, headers, rw.msg.Data)
		for k, v := range headers {
			rw.msg.Header.Set(k, v)
		}
		rw.msg.Header.Set(jetstream.MsgIDHeader, msgID)
		out = append(out, &rw)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("claim: %w", err)
	}
	return out, nil
}

// outcome is what publishing claimed rows came to.
type outcome struct {
	done, failed []int64
	failures     []string
	errs         []error
	// refused are rows left unpublished and flagged, and why.
	refused  []int64
	refusals []string
}

func (o *outcome) fail(id int64, err error) {
	o.failed, o.failures, o.errs = append(o.failed, id), append(o.failures, err.Error()), append(o.errs, err)
}

// ErrPublish means JetStream refused or did not confirm some claimed
// rows. Each of them was given a time before which it is not claimed
// again, so the rows behind it go on being relayed.
var ErrPublish = errors.New("outbox: publish failed")

// mark records, in the claiming transaction, which rows were published
// and when each failed one may be tried again: a row that keeps failing
// backs off on its own, so it can never hold up the rows behind it.
func (r *Relay) mark(ctx context.Context, tx pgx.Tx, o outcome) error {
	done, failed, failures := o.done, o.failed, o.failures
	if len(done) > 0 {
		if _, err := tx.Exec(ctx, `UPDATE outbox SET published_at = now(), last_error = NULL WHERE id = ANY($1)`, done); err != nil {
			return fmt.Errorf("mark published: %w", err)
		}
	}
	if len(failed) > 0 {
		if _, err := tx.Exec(ctx, `
			UPDATE outbox o SET attempts = o.attempts + 1, last_error = left(t.err, 500),
			       next_attempt_at = now() + least(make_interval(secs => 0.1 * 2 ^ least(o.attempts, 20)), make_interval(secs => $3))
			FROM unnest($1::int8[], $2::text[]) AS t(id, err) WHERE o.id = t.id`,
			failed, failures, r.cfg.MaxBackoff.Seconds()); err != nil {
			return fmt.Errorf("mark failed: %w", err)
		}
	}
	if err := markRefused(ctx, tx, o); err != nil {
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("mark published: %w", err)
	}
	return nil
}

// listen turns NOTIFY on NotifyChannel into wake-ups. It is only a hint:
// when the connection drops, polling carries on and listen reconnects.
func (r *Relay) listen(ctx context.Context, wake chan<- struct{}) {
	for ctx.Err() == nil {
		err := func() error {
			conn, err := r.pool.Acquire(ctx)
			if err != nil {
				return err
			}
			defer conn.Release()
			if _, err := conn.Exec(ctx, "LISTEN "+NotifyChannel); err != nil {
				return err
			}
			for {
				if _, err := conn.Conn().WaitForNotification(ctx); err != nil {
					return err
				}
				select {
				case wake <- struct{}{}:
				default:
				}
			}
		}()
		if ctx.Err() == nil {
			r.log.Debug().Err(err).Msg("outbox listen; polling meanwhile")
			r.pause(ctx, nil)
		}
	}
}

// pause waits PollInterval, or less when ctx ends or wake (nil for
// none) receives. It is the relay's one pause between polls; the
// module's own loops use internal/platform/wait, which a pkg/ package does not
// import.
func (r *Relay) pause(ctx context.Context, wake <-chan struct{}) {
	t := time.NewTimer(r.cfg.PollInterval)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	case <-wake:
	}
}

// purge deletes published rows past retention.
func (r *Relay) purge(ctx context.Context) error {
	_, err := r.pool.Exec(ctx, `DELETE FROM outbox WHERE published_at < now() - make_interval(secs => $1)`, r.cfg.Retention.Seconds())
	return err
}

func (r *Relay) gauge(ctx context.Context) {
	var n int64
	var age float64
	err := r.pool.QueryRow(ctx, `
		SELECT count(*), COALESCE(EXTRACT(EPOCH FROM now() - min(created_at)), 0)::float8
		FROM outbox WHERE published_at IS NULL AND refused_at IS NULL`).Scan(&n, &age)
	if err == nil {
		r.pending.Set(float64(n))
		r.oldest.Set(age)
	}
}
