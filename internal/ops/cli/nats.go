package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/rs/zerolog"

	"github.com/sluicehq/sluice/internal/platform/broker"
	"github.com/sluicehq/sluice/internal/platform/config"
)

func natsCommands() map[string]command {
	return map[string]command{
		"setup": {"declare the streams and durables as the topology owner (idempotent; keeps an operator's pause)", runNATSSetup},
	}
}

func runNATS(ctx context.Context, env Env, args []string) error {
	return subcommand(ctx, env, "nats", natsCommands(), args)
}

// runNATSSetup declares the JetStream topology. Services only verify it,
// so this runs before them, with the topology owner's credentials in
// NATS_URL: the only role allowed to create, update or delete streams and
// consumers.
func runNATSSetup(ctx context.Context, env Env, args []string) error {
	var c conn
	var ackWait time.Duration
	var replicas, maxMsgs, maxPerSource, maxBytes, maxAckPending int
	l := config.NewLoader("sluice nats setup", lookupOrNone(env))
	l.FlagSet().SetOutput(env.Stderr)
	config.RegisterNATS(l, &c.Common)
	l.Duration(&ackWait, "ack-wait", "ACK_WAIT", broker.DefaultAckWait, "the durables' AckWait: how soon a dead worker's batch is redelivered (give the consumers the same ACK_WAIT)")
	l.Int(&replicas, "stream-replicas", "STREAM_REPLICAS", broker.DefaultReplicas, "replicas of the INGEST and DLQ streams: 1, or 3 in a cluster")
	l.Int(&maxMsgs, "ingest-max-msgs", "INGEST_MAX_MSGS", broker.DefaultIngestMaxMsgs, "bound of the INGEST stream in messages (producers wait when it is full)")
	l.Int(&maxPerSource, "ingest-max-per-source", "INGEST_MAX_PER_SOURCE", broker.DefaultIngestMaxPerSource, "jobs one source may have in INGEST at once, so no source's backlog starves another's (-1: no bound)")
	l.Int(&maxBytes, "ingest-max-bytes", "INGEST_MAX_BYTES", broker.DefaultIngestMaxBytes, "bound of the INGEST stream in bytes")
	l.Int(&maxAckPending, "max-ack-pending", "MAX_ACK_PENDING", broker.DefaultMaxAckPending, "unacknowledged messages per durable; keep it above BATCH_SIZE × CONSUMER_WORKERS × consumers")
	rest, err := parse(l, args)
	if err != nil {
		return err
	}
	if err := noArgs("nats setup", rest); err != nil {
		return err
	}
	topo := broker.Topology{AckWait: ackWait, Replicas: replicas, IngestMaxMsgs: int64(maxMsgs),
		IngestMaxPerSource: int64(maxPerSource), IngestMaxBytes: int64(maxBytes), MaxAckPending: maxAckPending}
	if err := topo.Validate(); err != nil {
		return usageErr("%v", err)
	}
	nc, js, err := c.connectNATS("sluice-nats-setup", zerolog.Nop())
	if err != nil {
		return err
	}
	defer nc.Close()
	if err := broker.Ensure(ctx, js, topo); err != nil {
		return fmt.Errorf("%w (does NATS_URL carry the topology owner's credentials?)", err)
	}
	fmt.Fprintf(env.Stderr, "nats: streams %s and %s and their durables declared\n", broker.IngestStream, broker.DLQStream)
	return nil
}
