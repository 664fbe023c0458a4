package dlq

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/sluicehq/sluice/internal/platform/broker"
	"github.com/sluicehq/sluice/internal/store/deadletter"
	"github.com/sluicehq/sluice/internal/store/erase"
	"github.com/sluicehq/sluice/pkg/messages"
)

// Letter is one dead letter as delivered from the DLQ stream.
type Letter struct {
	messages.DeadLetter
	// OutboxID is the outbox row it was published from (its Nats-Msg-Id is
	// "dl:<OutboxID>"); it orders failures of one chunk.
	OutboxID int64
	// Delivered counts deliveries of this DLQ message, from 1.
	Delivered int
	// PayloadInPostgres says the message came without its payload, which
	// is too large for the stream; WithPayloads fills it in.
	PayloadInPostgres bool
}

// Result says how to settle a dead letter's message.
type Result struct {
	// Retry asks for redelivery after Delay; otherwise the message is acked.
	Retry bool
	Delay time.Duration
}

// Handler processes one dead letter. An error means "not processed": the
// message is redelivered after a short delay.
type Handler func(ctx context.Context, l Letter) (Result, error)

// Consume pulls from the DLQ durable and hands each dead letter to h until
// ctx ends. A message that is not a dead letter (nothing of ours writes
// one) is logged and acknowledged, so it cannot block the durable.
func Consume(ctx context.Context, js jetstream.JetStream, durable string, log zerolog.Logger, h Handler) error {
	log = log.With().Str("durable", durable).Logger()
	cons, err := broker.Lookup(ctx, js, broker.DLQStream, durable, log)
	if err != nil {
		return nil // ctx ended
	}
	broker.Pull(ctx, cons, broker.PullConfig{BatchSize: FetchBatch, MaxWait: FetchWait, Each: true, Log: log},
		func(ctx context.Context, msgs []jetstream.Msg) error {
			for _, msg := range msgs {
				settle(ctx, msg, log, h)
			}
			return nil
		})
	return nil
}

// Pulls from the DLQ durables: dead letters are handled one by one, as
// they arrive.
const (
	// FetchBatch is how many dead letters one fetch asks for.
	FetchBatch = broker.DefaultPullBatch
	// FetchWait bounds one fetch.
	FetchWait = broker.DefaultPullMaxWait
)

func settle(ctx context.Context, msg jetstream.Msg, log zerolog.Logger, h Handler) {
	dl, err := messages.DecodeDeadLetter(msg.Data())
	if err != nil {
		log.Error().Err(err).Str("subject", msg.Subject()).Msg("not a dead letter; dropping it from this durable")
		_ = msg.Term()
		return
	}
	l := Letter{DeadLetter: dl, OutboxID: outboxID(msg.Headers().Get(jetstream.MsgIDHeader)), Delivered: 1,
		PayloadInPostgres: msg.Headers().Get(deadletter.HeaderPayloadInPostgres) != ""}
	if meta, err := msg.Metadata(); err == nil {
		l.Delivered = int(meta.NumDelivered)
	}
	res, err := h(context.WithoutCancel(ctx), l)
	switch {
	case err != nil:
		log.Warn().Err(err).Str("dead_letter_id", dl.DeadLetterID).Msg("dead letter not processed; will retry")
		_ = msg.NakWithDelay(time.Second * time.Duration(min(l.Delivered, 30)))
	case res.Retry:
		_ = msg.NakWithDelay(res.Delay)
	default:
		if err := msg.Ack(); err != nil && !errors.Is(err, context.Canceled) {
			log.Warn().Err(err).Msg("ack failed; the dead letter will be redelivered and handled idempotently")
		}
	}
}

// WithPayloads wraps h so that a dead letter published without its
// payload (too large for the stream) reaches h with the payload read
// from dead_letter_payloads.
func WithPayloads(pool *pgxpool.Pool, h Handler) Handler {
	return func(ctx context.Context, l Letter) (Result, error) {
		if l.PayloadInPostgres && l.Payload == nil {
			var err error
			if l.Payload, err = deadletter.Payload(ctx, pool, l.OutboxID); err != nil {
				if errors.Is(err, pgx.ErrNoRows) && l.DocID != "" {
					// A delete erased it: the dead letter is of a
					// version that is gone, and there is nothing to do.
					if erased, eerr := erase.Erased(ctx, pool, l.DocID, l.DocVersion); eerr == nil && erased {
						return Result{}, nil
					}
				}
				return Result{}, fmt.Errorf("read payload of dead letter %s (outbox %d): %w", l.DeadLetterID, l.OutboxID, err)
			}
		}
		return h(ctx, l)
	}
}

// outboxID parses "dl:<id>"; 0 when absent.
func outboxID(msgID string) int64 {
	id, _ := strconv.ParseInt(strings.TrimPrefix(msgID, "dl:"), 10, 64)
	return id
}
