package producer

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/sluicehq/sluice/internal/chunk"
	"github.com/sluicehq/sluice/internal/corpus"
	"github.com/sluicehq/sluice/pkg/messages"
)

// Config tunes a producer run.
type Config struct {
	// SourceID names the corpus; required. See messages.ValidateSourceID.
	SourceID string
	// RunID identifies the run. Defaults to a new random id.
	RunID string
	// Chunk configures chunking. Defaults to chunk.DefaultConfig().
	Chunk chunk.Config
	// BatchDocs is how many documents are recorded per transaction.
	// Defaults to 200.
	BatchDocs int
	// MaxPending bounds unacknowledged async publishes. Defaults to 1024.
	MaxPending int
	// FullStreamWait is how long to wait before publishing again to a full
	// stream. Defaults to 1s.
	FullStreamWait time.Duration
}

func (c *Config) applyDefaults() {
	if c.RunID == "" {
		c.RunID = NewRunID(time.Now())
	}
	if c.Chunk.Size == 0 {
		c.Chunk = chunk.DefaultConfig()
	}
	if c.BatchDocs == 0 {
		c.BatchDocs = 200
	}
	if c.MaxPending == 0 {
		c.MaxPending = 1024
	}
	if c.FullStreamWait == 0 {
		c.FullStreamWait = time.Second
	}
}

// Validate says what is wrong with the configuration and how to fix it.
func (c Config) Validate() error {
	if err := messages.ValidateSourceID(c.SourceID); err != nil {
		return fmt.Errorf("--source: %w", err)
	}
	if c.Chunk.Size != 0 {
		if err := c.Chunk.Validate(); err != nil {
			return fmt.Errorf("chunking: %w", err)
		}
	}
	return nil
}

// NewRunID returns a sortable, unique run id.
func NewRunID(now time.Time) string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return now.UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(b)
}

// Summary is what a run did.
type Summary struct {
	RunID       string `json:"run_id"`
	Seen        int    `json:"documents_seen"`
	New         int    `json:"documents_new"`
	Changed     int    `json:"documents_changed"`
	Unchanged   int    `json:"documents_unchanged"`
	Empty       int    `json:"documents_empty"`
	Failed      int    `json:"documents_failed"`
	Chunks      int    `json:"chunks_published"`
	ParkedDocs  int    `json:"chunks_parked"`
	PublishWait int    `json:"publish_retries"`
}

// Producer records and publishes one run.
type Producer struct {
	cfg  Config
	pool *pgxpool.Pool
	js   jetstream.JetStream
	log  zerolog.Logger
	now  func() time.Time
	// Progress, when set, is called after every batch.
	Progress func(Summary)
}

// New returns a producer.
func New(cfg Config, pool *pgxpool.Pool, js jetstream.JetStream, log zerolog.Logger) (*Producer, error) {
	cfg.applyDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Producer{cfg: cfg, pool: pool, js: js, log: log, now: time.Now}, nil
}

// RunID is the run's id.
func (p *Producer) RunID() string { return p.cfg.RunID }

// Run reads every document from r, records and publishes it, and returns
// the run's summary.
func (p *Producer) Run(ctx context.Context, r *corpus.Reader) (Summary, error) {
	sum := Summary{RunID: p.cfg.RunID}
	if _, err := p.pool.Exec(ctx, `INSERT INTO ingest_runs (run_id, source_id) VALUES ($1, $2)`, p.cfg.RunID, p.cfg.SourceID); err != nil {
		return sum, fmt.Errorf("record run: %w", err)
	}
	batch := make([]corpus.Document, 0, p.cfg.BatchDocs)
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		err := p.batch(ctx, batch, &sum)
		batch = batch[:0]
		if p.Progress != nil {
			p.Progress(sum)
		}
		return err
	}
	err := r.Walk(ctx, func(doc corpus.Document) error {
		sum.Seen++
		batch = append(batch, doc)
		if len(batch) >= p.cfg.BatchDocs {
			return flush()
		}
		return nil
	})
	if err == nil {
		err = flush()
	}
	status := "running"
	if err != nil {
		status = "failed"
	}
	_, uerr := p.pool.Exec(context.WithoutCancel(ctx), `
		UPDATE ingest_runs SET documents = $2, published = $3, parked = parked + $4, status = $5,
		       halted_reason = $6, publish_finished_at = now()
		WHERE run_id = $1`, p.cfg.RunID, sum.Seen, sum.Chunks, sum.ParkedDocs, status, errText(err))
	return sum, errors.Join(err, uerr)
}

func errText(err error) *string {
	if err == nil {
		return nil
	}
	s := err.Error()
	return &s
}

// batch records a batch of documents in one transaction, then publishes
// the jobs it created.
func (p *Producer) batch(ctx context.Context, docs []corpus.Document, sum *Summary) error {
	plan, err := p.plan(ctx, docs, sum)
	if err != nil {
		return err
	}
	if err := p.record(ctx, plan); err != nil {
		return err
	}
	return p.publish(ctx, plan, sum)
}

// publish sends every planned job asynchronously with a bounded window and
// waits for every acknowledgement. A refused publish (the stream is full,
// or the server is away) is retried after a pause, forever: the manifest
// already promises the chunk, so dropping it is not an option.
func (p *Producer) publish(ctx context.Context, plan *plan, sum *Summary) error {
	pending := plan.jobs
	for len(pending) > 0 {
		futures := make([]jetstream.PubAckFuture, 0, len(pending))
		for _, j := range pending {
			msg := &nats.Msg{Subject: messages.ChunkSubject(p.cfg.SourceID), Data: j.raw, Header: nats.Header{}}
			msg.Header.Set(jetstream.MsgIDHeader, j.msgID)
			f, err := p.js.PublishMsgAsync(msg, jetstream.WithExpectStream("INGEST"))
			if err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				futures = append(futures, nil)
				continue
			}
			futures = append(futures, f)
		}
		var retry []plannedJob
		for i, f := range futures {
			if f == nil {
				retry = append(retry, pending[i])
				continue
			}
			select {
			case <-f.Ok():
				sum.Chunks++
			case err := <-f.Err():
				p.log.Debug().Err(err).Str("msg_id", pending[i].msgID).Msg("publish refused; will retry")
				retry = append(retry, pending[i])
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		if len(retry) > 0 {
			sum.PublishWait++
			p.log.Warn().Int("chunks", len(retry)).Msg("stream full or unavailable; waiting to publish again")
			select {
			case <-time.After(p.cfg.FullStreamWait):
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		pending = retry
	}
	return nil
}

// metadataJSON renders document metadata as a JSON object.
func metadataJSON(m map[string]any) (json.RawMessage, error) {
	if len(m) == 0 {
		return nil, nil
	}
	b, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	return messages.CanonicalJSON(b)
}
