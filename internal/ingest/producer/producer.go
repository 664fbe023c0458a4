package producer

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/sluicehq/sluice/internal/content/chunk"
	"github.com/sluicehq/sluice/internal/content/corpus"
	"github.com/sluicehq/sluice/internal/content/secrets"
	"github.com/sluicehq/sluice/internal/ingest/publish"
	"github.com/sluicehq/sluice/internal/platform/wait"
	"github.com/sluicehq/sluice/internal/store/deadletter"
	"github.com/sluicehq/sluice/internal/store/erase"
	"github.com/sluicehq/sluice/internal/store/runs"
	"github.com/sluicehq/sluice/pkg/classify"
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
	// Patience is how long the producer keeps trying to reach an
	// unreachable NATS before it records the rest of the run without
	// publishing. Nothing is lost: the manifest holds every job as owed,
	// and the outbox-relay's sweeper publishes it once NATS answers.
	// Defaults to DefaultPatience.
	Patience time.Duration
	// ConfirmDelay is how long a PubAck waits before the producer records
	// it, so that chunks a consumer stored meanwhile need no confirmation
	// write (publish.PublisherConfig.ConfirmDelay). It must stay well
	// under the sweeper's grace (OWED_GRACE, 1 minute): a chunk
	// unconfirmed past that is published again. Defaults to
	// DefaultConfirmDelay.
	ConfirmDelay time.Duration
	// HeartbeatInterval is how often the producer beats its run's
	// heartbeat, with its progress. Defaults to
	// runs.DefaultHeartbeatInterval.
	HeartbeatInterval time.Duration
	// HeartbeatTimeout is how long the producer may stay silent before
	// its run counts as having lost it: once none of its chunks is
	// pending, the run ends interrupted. It must span at least
	// runs.MinHeartbeatBeats beats. Defaults to
	// runs.DefaultHeartbeatTimeout.
	HeartbeatTimeout time.Duration
	// Secrets configures the screen every document passes before it is
	// chunked out. Defaults to escalating only the chunks a secret
	// touches.
	Secrets secrets.Config
	// Sync deletes, at the end of a run that read its whole input without
	// error, the source's documents the run did not read. Defaults to
	// false.
	Sync bool
	// MaxDeleteFraction is the largest share of the source's documents a
	// sync may delete; a sync that would delete more is refused. 1 lets
	// a sync delete everything. Defaults to DefaultMaxDeleteFraction.
	MaxDeleteFraction float64
	// MaxKeptFileBytes is the largest parked file whose bytes are kept
	// for a replay; a larger one's dead letter says they are not kept,
	// and why. Defaults to deadletter.DefaultMaxKeptFileBytes (64 MiB).
	MaxKeptFileBytes int64
	// Reread records every document read as a new version, even one
	// whose content is as recorded: a parked file replayed after a fix
	// is parked again under its new verdict, or stored. Defaults to
	// false.
	Reread bool
}

// Defaults of Config.
const (
	DefaultBatchDocs      = 200
	DefaultMaxPending     = 1024
	DefaultFullStreamWait = time.Second
	DefaultPatience       = 30 * time.Second
	DefaultConfirmDelay   = time.Second
	// MaxConfirmDelay bounds ConfirmDelay well under publish.DefaultGrace.
	MaxConfirmDelay = 10 * time.Second
)

func (c *Config) applyDefaults() {
	if c.RunID == "" {
		c.RunID = NewRunID(time.Now())
	}
	if c.Chunk.Size == 0 {
		c.Chunk = chunk.DefaultConfig()
	}
	if c.BatchDocs == 0 {
		c.BatchDocs = DefaultBatchDocs
	}
	if c.MaxPending == 0 {
		c.MaxPending = DefaultMaxPending
	}
	if c.FullStreamWait == 0 {
		c.FullStreamWait = DefaultFullStreamWait
	}
	if c.Patience == 0 {
		c.Patience = DefaultPatience
	}
	if c.ConfirmDelay == 0 {
		c.ConfirmDelay = DefaultConfirmDelay
	}
	if c.HeartbeatInterval == 0 {
		c.HeartbeatInterval = runs.DefaultHeartbeatInterval
	}
	if c.HeartbeatTimeout == 0 {
		c.HeartbeatTimeout = runs.DefaultHeartbeatTimeout
	}
	if c.MaxDeleteFraction == 0 {
		c.MaxDeleteFraction = DefaultMaxDeleteFraction
	}
	if c.MaxKeptFileBytes == 0 {
		c.MaxKeptFileBytes = deadletter.DefaultMaxKeptFileBytes
	}
}

// Validate says what is wrong with the configuration and how to fix it.
func (c Config) Validate() error {
	if err := validateSourceName(c.SourceID); err != nil {
		return err
	}
	if c.Chunk.Size != 0 {
		if err := c.Chunk.Validate(); err != nil {
			return fmt.Errorf("chunking: %w", err)
		}
	}
	if c.MaxDeleteFraction < 0 || c.MaxDeleteFraction > 1 {
		return fmt.Errorf("--max-delete-fraction %g: use a share between 0 and 1, such as %g (1 lets a sync delete everything)", c.MaxDeleteFraction, DefaultMaxDeleteFraction)
	}
	if c.MaxKeptFileBytes < 0 {
		return fmt.Errorf("--max-kept-file-bytes %d: use a positive size, such as the default %d", c.MaxKeptFileBytes, deadletter.DefaultMaxKeptFileBytes)
	}
	if c.ConfirmDelay < 0 || c.ConfirmDelay > MaxConfirmDelay {
		return fmt.Errorf("--confirm-delay %s: use a duration up to %s, well under the sweeper's OWED_GRACE", c.ConfirmDelay, MaxConfirmDelay)
	}
	return c.validateHeartbeat()
}

// validateHeartbeat checks the heartbeat's settings, its defaults
// standing in for those not set.
func (c Config) validateHeartbeat() error {
	interval, timeout := cmp.Or(c.HeartbeatInterval, runs.DefaultHeartbeatInterval), cmp.Or(c.HeartbeatTimeout, runs.DefaultHeartbeatTimeout)
	if interval < 0 {
		return fmt.Errorf("--run-heartbeat-interval %s: use a positive duration such as %s", interval, runs.DefaultHeartbeatInterval)
	}
	if timeout < runs.MinHeartbeatBeats*interval {
		return fmt.Errorf("--run-heartbeat-timeout %s: use at least %d heartbeat intervals (%s), so that a late beat is not taken for a lost producer",
			timeout, runs.MinHeartbeatBeats, runs.MinHeartbeatBeats*interval)
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
	RunID      string `json:"run_id"`
	Seen       int    `json:"documents_seen"`
	New        int    `json:"documents_new"`
	Changed    int    `json:"documents_changed"`
	Unchanged  int    `json:"documents_unchanged"`
	Empty      int    `json:"documents_empty"`
	Failed     int    `json:"documents_failed"`
	Chunks     int    `json:"chunks_published"`
	ParkedDocs int    `json:"chunks_parked"`
	// Escalated are the chunks of ParkedDocs held back because a secret
	// touches them, for an operator's review (sluice dlq list).
	Escalated int `json:"chunks_escalated"`
	// Redecoded counts, by the encoding they were decoded from, the new
	// or changed documents that were not UTF-8 (Windows-1252, UTF-16):
	// their text is what that encoding reads, which may not be what the
	// author meant.
	Redecoded   map[string]int `json:"documents_redecoded,omitempty"`
	PublishWait int            `json:"publish_retries"`
	// Owed are chunks recorded but not confirmed by NATS when the run
	// ended; the outbox-relay publishes them once NATS answers.
	Owed int `json:"chunks_owed"`
	// Republished are chunks of earlier runs of the source that were owed
	// and that this run published first.
	Republished int `json:"chunks_republished"`
	// Stopped is why the producer stopped publishing before the end of
	// its input: its run was halted or cancelled. Empty otherwise.
	Stopped string `json:"stopped,omitempty"`
	// Invalid are documents of the input that could not be read as
	// documents (an unreadable file, an invalid or truncated JSONL line).
	Invalid int `json:"documents_invalid"`
	// unnamed are the Invalid documents that are not whole files: a JSONL
	// line or a record whose own id may be what could not be read, so
	// that a document missing from the input may still be in it.
	unnamed int
	// Deleted are documents the run deleted: named by a tombstone, or,
	// with Sync, not in its input.
	Deleted int `json:"documents_deleted"`
	// TombstonesUnknown are tombstones naming no document of the source.
	TombstonesUnknown int `json:"tombstones_unknown"`
	// SyncSkipped is why a sync deleted nothing. Empty otherwise.
	SyncSkipped string `json:"sync_skipped,omitempty"`
	// Files is what the run did with every file its walk met: read,
	// excluded by a rule (by reason), or parked.
	Files runs.Files `json:"files"`
	// ExcludedFiles are the excluded files, with --list-skipped only.
	ExcludedFiles []ExcludedFile `json:"excluded_files,omitempty"`
}

// Producer records and publishes one run.
type Producer struct {
	cfg  Config
	pool *pgxpool.Pool
	js   jetstream.JetStream
	pub  *publish.Publisher
	// eraser deletes the documents tombstones and syncs name.
	eraser *erase.Eraser
	log    zerolog.Logger
	now    func() time.Time
	// unreachableSince is when publishing first failed to reach NATS;
	// offline is set once that lasted past Patience.
	unreachableSince time.Time
	offline          bool
	// beatProgress is what the run has done, for its next heartbeat.
	beatProgress atomic.Pointer[runs.Progress]
	// DeleteMetrics, when set, counts the run's deletes.
	DeleteMetrics *erase.Metrics
	// Files accounts for the files the run's walk meets: the same tally
	// whose Observe is the reader's corpus.Config.OnFile. Defaults to a
	// tally that sees only the documents.
	Files *FileTally
	// OCRMetrics, when set, counts the pages OCR read, its seconds and
	// confidences, and the documents below the bar.
	OCRMetrics *OCRMetrics
	// Progress, when set, is called after every batch.
	Progress func(Summary)
	// Explain, when set, turns an error that ends a run because of a
	// misconfiguration into one naming the setting to fix, for the run's
	// record and the exit. Defaults to the error as it is.
	Explain func(error) error
	// OpenFile opens a parked file to keep its bytes. Defaults to
	// opening the path the walk named it by.
	OpenFile func(path string) (io.ReadCloser, error)
	// Crash, when set, is called at the crash points
	// "after-plan-before-record", "after-record-before-publish" and
	// "after-delete-batch", after each delete transaction of a sync (see
	// package crashpoint). A table source's drain adds
	// CrashAfterRunBeforeAck.
	Crash func(point string)
	// Recorded, when set, is called in the transaction that records a
	// batch, with the native ids of its documents: a source that keeps
	// its own ledger of what was recorded writes it there, so that the
	// ledger holds what the run recorded and nothing else.
	Recorded func(ctx context.Context, tx pgx.Tx, natives []string) error
}

// New returns a producer.
func New(cfg Config, pool *pgxpool.Pool, js jetstream.JetStream, log zerolog.Logger) (*Producer, error) {
	cfg.applyDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Producer{cfg: cfg, pool: pool, js: js, pub: publish.NewPublisher(pool, js, publish.PublisherConfig{Window: cfg.MaxPending, ConfirmDelay: cfg.ConfirmDelay}),
		log: log, now: time.Now, OpenFile: openFile}, nil
}

// RunID is the run's id.
func (p *Producer) RunID() string { return p.cfg.RunID }

// Run reads every document r yields, records and publishes it, and
// returns the run's summary. r is a directory or file walk (a
// *corpus.Reader) or any other source of documents.
func (p *Producer) Run(ctx context.Context, r corpus.Walker) (Summary, error) {
	sum := Summary{RunID: p.cfg.RunID}
	if p.Files == nil {
		p.Files = &FileTally{}
	}
	p.eraser = erase.New(p.pool, p.DeleteMetrics)
	if err := runs.Open(ctx, p.pool, p.cfg.RunID, p.cfg.SourceID, p.cfg.HeartbeatTimeout); err != nil {
		return sum, err
	}
	stopBeating := p.beat(ctx)
	p.republishOwed(ctx, &sum)
	err := p.read(ctx, r, &sum)
	if ferr := p.flushConfirmations(ctx); ferr != nil && err == nil {
		err = ferr
	}
	if err == nil && p.cfg.Sync {
		err = p.sync(ctx, &sum)
	}
	if errors.Is(err, errStopped) && sum.Stopped != "" {
		err = nil
		p.log.Warn().Str("run_id", p.cfg.RunID).Str("reason", sum.Stopped).
			Msg("run halted or cancelled: the producer stopped publishing; resume or cancel it with sluice runs, then run the producer again for the rest")
	}
	stopBeating()
	err = p.end(ctx, &sum, err)
	return sum, err
}

// read walks r and records and publishes its documents a batch at a time,
// deleting the tombstones among them.
func (p *Producer) read(ctx context.Context, r corpus.Walker, sum *Summary) error {
	batch := make([]corpus.Document, 0, p.cfg.BatchDocs)
	var tombstones []string
	flush := func() error {
		if len(batch) == 0 {
			err := p.deleteTombstones(ctx, tombstones, sum)
			tombstones = tombstones[:0]
			return err
		}
		if stop, err := p.stopped(ctx, sum); stop || err != nil {
			if stop {
				sum.Seen -= len(batch)
				p.Files.forget(wholeFiles(batch))
				return errStopped
			}
			return err
		}
		err := p.batch(ctx, batch, sum)
		batch = batch[:0]
		if err == nil {
			err = p.deleteTombstones(ctx, tombstones, sum)
			tombstones = tombstones[:0]
		}
		p.report(*sum)
		if p.Progress != nil {
			p.Progress(*sum)
		}
		return err
	}
	err := r.Walk(ctx, func(doc corpus.Document) error {
		sum.Seen++
		switch doc.Status {
		case corpus.StatusDeleted:
			tombstones = append(tombstones, doc.NativeID)
		case corpus.StatusInvalid:
			sum.Invalid++
			if doc.File == "" {
				sum.unnamed++
			}
			batch = append(batch, doc)
		default:
			batch = append(batch, doc)
		}
		if len(batch)+len(tombstones) >= p.cfg.BatchDocs {
			return flush()
		}
		return nil
	})
	if err == nil {
		err = flush()
	}
	return err
}

// end records what the run did with the files it met, then how the run
// ended, err included, and returns err joined with any failure to record
// them. The files come first: once publishing ends the run may settle
// completed, and a completed run's counts are final (runs.Unaccounted).
func (p *Producer) end(ctx context.Context, sum *Summary, err error) error {
	sum.Files, sum.ExcludedFiles = p.Files.Counts(), p.Files.Excluded()
	uerr := runs.RecordFiles(context.WithoutCancel(ctx), p.pool, p.cfg.RunID, sum.Files)
	if uerr == nil {
		uerr = runs.EndPublishing(context.WithoutCancel(ctx), p.pool, p.cfg.RunID, progressOf(*sum), sum.ParkedDocs, err)
	}
	if sum.Owed > 0 {
		p.log.Warn().Int("chunks", sum.Owed).Msg("NATS did not confirm every chunk; they are recorded as owed and the outbox-relay publishes them once NATS answers")
	}
	return errors.Join(err, uerr)
}

// wholeFiles counts the documents of docs that are whole files.
func wholeFiles(docs []corpus.Document) int {
	n := 0
	for _, d := range docs {
		if d.File != "" {
			n++
		}
	}
	return n
}

// flushTimeout bounds recording the last held PubAcks once a run ends,
// its context cancelled or not.
const flushTimeout = 10 * time.Second

// flushConfirmations records the PubAcks the publisher still holds. What
// it cannot record stays owed: the sweeper publishes it again after its
// grace, and the duplicate window makes that a confirmation.
func (p *Producer) flushConfirmations(ctx context.Context) error {
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), flushTimeout)
	defer cancel()
	if err := p.pub.Flush(fctx); err != nil {
		return fmt.Errorf("record publish confirmations: %w", err)
	}
	return nil
}

// errStopped ends the walk of a run that was halted or cancelled.
var errStopped = errors.New("run stopped")

// stopped reports whether the run was halted or cancelled, recording why
// in sum.
func (p *Producer) stopped(ctx context.Context, sum *Summary) (bool, error) {
	st, reason, err := runs.Get(ctx, p.pool, p.cfg.RunID)
	if err != nil {
		return false, err
	}
	if st != runs.Halted && st != runs.Cancelled {
		return false, nil
	}
	sum.Stopped = string(st) + ": " + reason
	return true, nil
}

// republishOwed publishes what earlier runs of the source recorded but
// never had confirmed, before this run adds its own.
func (p *Producer) republishOwed(ctx context.Context, sum *Summary) {
	sweeper, err := publish.NewSweeper(publish.SweeperConfig{}, publish.SweeperDeps{Pool: p.pool, JS: p.js, Log: p.log})
	if err == nil {
		var res publish.Result
		res, err = sweeper.Sweep(ctx, p.cfg.SourceID, 0)
		sum.Republished = res.Confirmed
		if err == nil && len(res.Failed) > 0 {
			err = res.Err
		}
	}
	if err != nil {
		p.log.Warn().Err(err).Msg("could not republish owed chunks of earlier runs; the outbox-relay will")
	}
}

// batch records a batch of documents in one transaction, then publishes
// the jobs it created.
func (p *Producer) batch(ctx context.Context, docs []corpus.Document, sum *Summary) error {
	plan, err := p.plan(ctx, docs, sum)
	if err != nil {
		return err
	}
	if p.Crash != nil {
		p.Crash("after-plan-before-record")
	}
	if err := p.record(ctx, plan, docs); err != nil {
		return err
	}
	for _, f := range plan.files {
		p.Files.recorded(f)
		p.OCRMetrics.observe(p.cfg.SourceID, f)
	}
	if p.Crash != nil {
		p.Crash("after-record-before-publish")
	}
	return p.publish(ctx, plan, sum)
}

// misconfigured returns the error that ends the run when a publish
// failed because of a misconfiguration rather than an outage: NATS
// denies the producer's user the subject (which it says apart from the
// publish, on the connection), or the server is not one that takes
// JetStream publishes. Waiting cannot clear it, so the run fails now
// instead of recording the rest of its chunks as owed. Nil otherwise.
func (p *Producer) misconfigured(err error) error {
	if _, ok := classify.Misconfigured(err); !ok && p.js != nil {
		if last := p.js.Conn().LastError(); last != nil {
			if _, ok := classify.Misconfigured(last); ok {
				err = fmt.Errorf("%w: %w", err, last)
			}
		}
	}
	if _, ok := classify.Misconfigured(err); !ok {
		return nil
	}
	err = fmt.Errorf("publish chunk jobs: %w", err)
	if p.Explain != nil {
		err = p.Explain(err)
	}
	return err
}

// publish sends every planned job and records each PubAck in the
// manifest. A full stream is back-pressure: the producer waits and tries
// again, as long as it takes. An unreachable NATS is an outage: after
// Patience the producer stops publishing for the rest of the run and
// leaves the jobs owed, for the outbox-relay's sweeper to publish.
func (p *Producer) publish(ctx context.Context, plan *plan, sum *Summary) error {
	pending := make([]publish.Job, len(plan.jobs))
	for i, j := range plan.jobs {
		pending[i] = publish.Job{DocID: j.docID, Index: j.index, Version: j.version, Source: p.cfg.SourceID, Raw: j.raw}
	}
	for len(pending) > 0 && !p.offline {
		res, err := p.pub.Publish(ctx, pending)
		sum.Chunks += res.Confirmed
		p.report(*sum)
		if err != nil {
			return err
		}
		pending = res.Failed
		if len(pending) == 0 {
			p.unreachableSince = time.Time{}
			break
		}
		if err := p.misconfigured(res.Err); err != nil {
			return err
		}
		if publish.Unavailable(res.Err) {
			if p.unreachableSince.IsZero() {
				p.unreachableSince = p.now()
			}
			if p.now().Sub(p.unreachableSince) >= p.cfg.Patience {
				p.offline = true
				p.log.Warn().Err(res.Err).Dur("patience", p.cfg.Patience).
					Msg("NATS unreachable: recording the rest of the run without publishing; the outbox-relay publishes it once NATS answers")
				break
			}
		}
		sum.PublishWait++
		p.log.Warn().Err(res.Err).Int("chunks", len(pending)).Msg("stream full or NATS unavailable; waiting to publish again")
		if !wait.Sleep(ctx, p.cfg.FullStreamWait, nil) {
			return ctx.Err()
		}
	}
	if p.offline {
		sum.Owed += len(pending)
	}
	return nil
}
