package broker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/sluicehq/sluice/internal/platform/policy"
	"github.com/sluicehq/sluice/pkg/messages"
)

// Stream and durable consumer names (design §4).
const (
	IngestStream = messages.IngestStream
	DLQStream    = messages.DLQStream

	WorkersConsumer  = "workers"
	ReplayConsumer   = "replay"
	TriageConsumer   = "triage"
	ReplayerConsumer = "replayer"
	AlerterConsumer  = "alerter"
	// BackfillConsumer writes later index generations (package backfill).
	BackfillConsumer = "backfill"

	ChunkSubjects  = "ingest.chunks.>"
	ReplaySubjects = "ingest.replay.>"
	// BackfillSubjects hold chunks owed to a later index generation.
	BackfillSubjects = "ingest.backfill.>"
	DLQSubjects      = "dlq.>"
)

// The fleet budget's membership (package fleetbudget): a key-value
// bucket whose entries live BudgetMemberTTL after their last heartbeat,
// by the server's clock.
const (
	BudgetBucket = "sluice_budget"
	// BudgetStream is the stream that holds BudgetBucket.
	BudgetStream = "KV_" + BudgetBucket
	// BudgetSubjects are the subjects of BudgetBucket's entries.
	BudgetSubjects = "$KV." + BudgetBucket + ".>"
	// BudgetMemberTTL is how long a member's entry outlives its last
	// heartbeat: a dead member's share returns to the others within it
	// and one heartbeat.
	BudgetMemberTTL = 8 * time.Second
)

// The capture of object stores' event notifications: a store such as
// Versity's gateway publishes them as plain NATS messages, which are lost
// while nothing listens, so a stream keeps them for S3 sources'
// followers (producer --s3 --follow), each with its own durable.
const (
	// S3EventsStream holds the event notifications.
	S3EventsStream = "S3_EVENTS"
	// S3EventSubjects are the subjects a store publishes its events to:
	// s3.events.<anything>, such as s3.events.<bucket>.
	S3EventSubjects = "s3.events.>"
	// S3EventsMaxAge is how long an event is kept: a follower away for
	// longer still catches up by its reconciling listing.
	S3EventsMaxAge = 24 * time.Hour
	// S3EventsMaxBytes bounds the stream: past it the oldest events go,
	// which the followers' reconciling listings make up for.
	S3EventsMaxBytes = 256 << 20
)

// S3EventsConfig is the S3_EVENTS stream's configuration.
func (t Topology) S3EventsConfig() jetstream.StreamConfig {
	t.applyDefaults()
	return jetstream.StreamConfig{
		Name:        S3EventsStream,
		Description: "object stores' event notifications: limits retention so every S3 source's follower sees every one",
		Subjects:    []string{S3EventSubjects},
		Retention:   jetstream.LimitsPolicy,
		Storage:     jetstream.FileStorage,
		Discard:     jetstream.DiscardOld,
		MaxAge:      S3EventsMaxAge,
		MaxBytes:    S3EventsMaxBytes,
		Replicas:    t.Replicas,
		MaxMsgSize:  MaxPayload,
	}
}

// S3EventsDurable is the durable of the follower of S3 source source.
func S3EventsDurable(source string) string { return "s3-" + source }

// BudgetConfig is the fleet budget's bucket: one entry per member, on
// file so that the bucket outlives a server's restart (members' entries
// come back with their next heartbeat anyway).
func (t Topology) BudgetConfig() jetstream.KeyValueConfig {
	t.applyDefaults()
	return jetstream.KeyValueConfig{
		Bucket:      BudgetBucket,
		Description: "sluice fleet budget: one entry per process that calls a provider",
		History:     1,
		TTL:         BudgetMemberTTL,
		Storage:     jetstream.FileStorage,
		Replicas:    t.Replicas,
	}
}

// MaxPayload is the largest message, headers included, that every stream
// accepts. It equals the NATS server's max_payload, which testenv, the demo
// and compose set explicitly to this value: then a message the server
// lets through is one the stream stores. messages.MaxMessageBytes keeps a
// chunk job below it with room for headers, and a dead letter above it
// travels by reference (see outbox).
const MaxPayload = 1 << 20

// Topology defaults, shared by Topology and the flags of `sluice nats
// setup`.
const (
	// DefaultIngestMaxMsgs bounds INGEST in messages.
	DefaultIngestMaxMsgs = 1_000_000
	// DefaultIngestMaxPerSource bounds the jobs one source may have in
	// INGEST at once, delivered or not: the most any other source's work
	// waits behind it.
	DefaultIngestMaxPerSource = 10_000
	// DefaultIngestMaxBytes bounds INGEST in bytes: 2 GiB.
	DefaultIngestMaxBytes = 2 << 30
	// DefaultReplicas is the streams' replica count on a single server.
	DefaultReplicas = 1
	// DefaultAckWait is the durables' AckWait, which the consumer's
	// heartbeat interval (ACK_WAIT/4) must match.
	DefaultAckWait = 60 * time.Second
	// DefaultMaxAckPending bounds each durable's unacknowledged messages.
	DefaultMaxAckPending = 4096
	// DefaultDuplicateWindow is the streams' publish dedupe window.
	DefaultDuplicateWindow = 2 * time.Minute
	// DefaultDLQMaxAge is how long the DLQ stream keeps a dead letter: as
	// long as triage keeps its payload (policy.DefaultPayloadRetention, a
	// quarter).
	DefaultDLQMaxAge = policy.DefaultPayloadRetention
	// DefaultMaxDeliveries is the application's delivery cap, enforced by
	// the pipeline (MAX_DELIVERIES).
	DefaultMaxDeliveries = 5
)

// ErrTopologyMissing is returned when a stream Sluice needs does not
// exist: only the topology owner declares them (`sluice nats setup`).
var ErrTopologyMissing = errors.New("jetstream topology not declared: run `sluice nats setup` with the topology owner's credentials")

// Topology sizes the streams and consumers.
type Topology struct {
	// IngestMaxMsgs bounds INGEST; with DiscardNew a full stream refuses
	// publishes, so producers feel back-pressure and nothing is dropped.
	// Defaults to 1,000,000.
	IngestMaxMsgs int64
	// IngestMaxPerSource bounds each subject of INGEST, so each source's
	// fresh jobs and, apart, its replays: a source at its bound has its
	// publishes refused (discard new per subject) and its producer waits,
	// so one source's backlog can never queue more than this in front of
	// another's. -1 lifts the bound. Defaults to 10,000.
	IngestMaxPerSource int64
	// IngestMaxBytes bounds INGEST by size. Defaults to 2 GiB.
	IngestMaxBytes int64
	// DuplicateWindow is the publish dedupe window. Defaults to 2 minutes.
	DuplicateWindow time.Duration
	// DLQMaxAge is how long dead letters stay in the DLQ stream, longer
	// than anything else. Defaults to 90 days.
	DLQMaxAge time.Duration
	// Replicas is the stream replica count: 1 alone, 3 in a cluster.
	// Defaults to 1.
	Replicas int
	// MaxDeliveries is the application's delivery cap, enforced by the
	// pipeline; it only validates here. The INGEST consumers' MaxDeliver
	// is unlimited (see ConsumerConfig). Defaults to 5.
	MaxDeliveries int
	// AckWait is how long a delivery may go unacknowledged before
	// redelivery; workers send InProgress heartbeats for long batches, so
	// it must exceed one embed call plus one commit, not a whole batch.
	// Defaults to 60s.
	AckWait time.Duration
	// MaxAckPending bounds unacknowledged messages per consumer; keep it
	// above batch size × workers. Defaults to 4096.
	MaxAckPending int
}

func (t *Topology) applyDefaults() {
	if t.IngestMaxMsgs == 0 {
		t.IngestMaxMsgs = DefaultIngestMaxMsgs
	}
	if t.IngestMaxPerSource == 0 {
		t.IngestMaxPerSource = DefaultIngestMaxPerSource
	}
	if t.IngestMaxBytes == 0 {
		t.IngestMaxBytes = DefaultIngestMaxBytes
	}
	if t.DuplicateWindow == 0 {
		t.DuplicateWindow = DefaultDuplicateWindow
	}
	if t.DLQMaxAge == 0 {
		t.DLQMaxAge = DefaultDLQMaxAge
	}
	if t.Replicas == 0 {
		t.Replicas = DefaultReplicas
	}
	if t.MaxDeliveries == 0 {
		t.MaxDeliveries = DefaultMaxDeliveries
	}
	if t.AckWait == 0 {
		t.AckWait = DefaultAckWait
	}
	if t.MaxAckPending == 0 {
		t.MaxAckPending = DefaultMaxAckPending
	}
}

// Validate reports settings that would break the delivery guarantees.
func (t Topology) Validate() error {
	t.applyDefaults()
	var errs []error
	if t.DuplicateWindow < 2*time.Minute {
		errs = append(errs, fmt.Errorf("duplicate window %s: use at least 2m", t.DuplicateWindow))
	}
	if t.MaxDeliveries < 1 {
		errs = append(errs, fmt.Errorf("max deliveries %d: use at least 1", t.MaxDeliveries))
	}
	if t.Replicas != 1 && t.Replicas != 3 && t.Replicas != 5 {
		errs = append(errs, fmt.Errorf("replicas %d: use 1, 3 or 5", t.Replicas))
	}
	if t.IngestMaxPerSource < 1 && t.IngestMaxPerSource != -1 {
		errs = append(errs, fmt.Errorf("ingest max per source %d: use at least 1, or -1 for no bound", t.IngestMaxPerSource))
	}
	if t.AckWait < time.Second {
		errs = append(errs, fmt.Errorf("ack wait %s: use at least 1s, above the worst-case embed call", t.AckWait))
	}
	return errors.Join(errs...)
}

// IngestConfig is the INGEST stream's configuration.
func (t Topology) IngestConfig() jetstream.StreamConfig {
	t.applyDefaults()
	return jetstream.StreamConfig{
		Name:        IngestStream,
		Description: "chunk jobs: a work queue, each message taken by exactly one consumer",
		Subjects:    []string{ChunkSubjects, ReplaySubjects, BackfillSubjects},
		Retention:   jetstream.WorkQueuePolicy,
		Storage:     jetstream.FileStorage,
		Discard:     jetstream.DiscardNew,
		MaxMsgs:     t.IngestMaxMsgs,
		MaxBytes:    t.IngestMaxBytes,
		Duplicates:  t.DuplicateWindow,
		Replicas:    t.Replicas,
		MaxMsgSize:  MaxPayload,
		// Fair sources: a subject is one source's jobs (or its replays).
		MaxMsgsPerSubject:    t.IngestMaxPerSource,
		DiscardNewPerSubject: t.IngestMaxPerSource > 0,
	}
}

// DLQConfig is the DLQ stream's configuration.
func (t Topology) DLQConfig() jetstream.StreamConfig {
	t.applyDefaults()
	return jetstream.StreamConfig{
		Name:        DLQStream,
		Description: "dead letters: limits retention so every durable sees every one",
		Subjects:    []string{DLQSubjects},
		Retention:   jetstream.LimitsPolicy,
		Storage:     jetstream.FileStorage,
		Discard:     jetstream.DiscardOld,
		MaxAge:      t.DLQMaxAge,
		Duplicates:  t.DuplicateWindow,
		Replicas:    t.Replicas,
		MaxMsgSize:  MaxPayload,
	}
}

// ConsumerConfig returns the configuration of one of the named durables.
//
// The application owns the delivery budget completely, so every durable's
// MaxDeliver is unlimited. A WorkQueue stream keeps a message that
// reached JetStream's MaxDeliver but stops delivering it, stranding it
// for good (nats-server #5564); with no server-side cap that cannot
// happen. The pipeline parks a job whose delivery count passes its cap
// before doing any work on it, so a job whose every delivery kills its
// worker is parked on the next one, and time spent while a dependency is
// down spends no delivery because consumers then hold their batch and
// stop pulling.
func (t Topology) ConsumerConfig(name string) (jetstream.ConsumerConfig, error) {
	t.applyDefaults()
	cfg := jetstream.ConsumerConfig{
		Durable:       name,
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       t.AckWait,
		MaxAckPending: t.MaxAckPending,
		DeliverPolicy: jetstream.DeliverAllPolicy,
		MaxDeliver:    -1,
	}
	switch name {
	case WorkersConsumer:
		cfg.FilterSubject = ChunkSubjects
	case ReplayConsumer:
		cfg.FilterSubject = ReplaySubjects
	case BackfillConsumer:
		cfg.FilterSubject = BackfillSubjects
	case TriageConsumer, AlerterConsumer:
		cfg.FilterSubject = DLQSubjects
	case ReplayerConsumer:
		// The replayer only ever acts on recoverable dead letters; it waits
		// for next_retry_at with NakWithDelay.
		cfg.FilterSubject = "dlq.retry.>"
	default:
		return jetstream.ConsumerConfig{}, fmt.Errorf("unknown durable %q", name)
	}
	cfg.Description = "sluice " + name
	return cfg, nil
}

// Ensure declares the streams (INGEST, DLQ and S3_EVENTS), the fleet
// budget's bucket and every durable consumer, creating what
// is missing and updating what differs, keeping an operator's pause. Only
// the topology owner's credentials allow it (`sluice nats setup`); every
// service only verifies the topology (Verify).
func Ensure(ctx context.Context, js jetstream.JetStream, t Topology) error {
	if err := t.Validate(); err != nil {
		return err
	}
	for _, sc := range []jetstream.StreamConfig{t.IngestConfig(), t.DLQConfig(), t.S3EventsConfig()} {
		if err := declare(ctx, func(ctx context.Context) error {
			_, err := js.CreateOrUpdateStream(ctx, sc)
			return err
		}); err != nil {
			return fmt.Errorf("declare stream %s: %w", sc.Name, err)
		}
	}
	if err := declare(ctx, func(ctx context.Context) error {
		_, err := js.CreateOrUpdateKeyValue(ctx, t.BudgetConfig())
		return err
	}); err != nil {
		return fmt.Errorf("declare bucket %s: %w", BudgetBucket, err)
	}
	for _, c := range []struct{ stream, name string }{
		{IngestStream, WorkersConsumer},
		{IngestStream, ReplayConsumer},
		{IngestStream, BackfillConsumer},
		{DLQStream, TriageConsumer},
		{DLQStream, ReplayerConsumer},
		{DLQStream, AlerterConsumer},
	} {
		cc, err := t.ConsumerConfig(c.name)
		if err != nil {
			return err
		}
		if err := declare(ctx, func(ctx context.Context) error {
			// An operator's pause (sluice dlq pause) outlives a new setup.
			if existing, err := js.Consumer(ctx, c.stream, c.name); err == nil {
				cc.PauseUntil = existing.CachedInfo().Config.PauseUntil
			} else if !errors.Is(err, jetstream.ErrConsumerNotFound) {
				return fmt.Errorf("look up: %w", err)
			}
			_, err := js.CreateOrUpdateConsumer(ctx, c.stream, cc)
			return err
		}); err != nil {
			return fmt.Errorf("declare consumer %s/%s: %w", c.stream, c.name, err)
		}
	}
	return nil
}

// declare runs one of Ensure's declarations through Settle: a new
// replicated stream elects its leader as it is created, and a reply lost
// to that election would otherwise hold Ensure for its caller's whole
// deadline; the declarations are idempotent, so asking again is safe.
func declare(ctx context.Context, fn func(context.Context) error) error {
	return Settle(ctx, SettleConfig{}, fn)
}

// Verify checks that both streams exist, reading only their information.
// A missing stream is ErrTopologyMissing; any other error is the broker's.
func Verify(ctx context.Context, js jetstream.JetStream) error {
	for _, name := range []string{IngestStream, DLQStream} {
		if _, err := Stream(ctx, js, name); err != nil {
			return err
		}
	}
	return nil
}

// Stream looks up one of Sluice's streams; a missing one is
// ErrTopologyMissing.
func Stream(ctx context.Context, js jetstream.JetStream, name string) (jetstream.Stream, error) {
	s, err := js.Stream(ctx, name)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil, fmt.Errorf("stream %s: %w", name, ErrTopologyMissing)
	}
	if err != nil {
		return nil, fmt.Errorf("look up stream %s: %w", name, err)
	}
	return s, nil
}
