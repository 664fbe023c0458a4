package publish

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/sluicehq/sluice/internal/platform/broker"
	"github.com/sluicehq/sluice/internal/store/manifest"
	"github.com/sluicehq/sluice/pkg/classify"
	"github.com/sluicehq/sluice/pkg/messages"
	"github.com/sluicehq/sluice/pkg/puback"
)

// DefaultWindow is how many publishes may await their PubAck at once.
const DefaultWindow = 1024

// maxRegenerations bounds how often one call publishes a vanished job
// again; a job that keeps vanishing is left owed for the next sweep.
const maxRegenerations = 3

// PublisherConfig tunes a Publisher.
type PublisherConfig struct {
	// Window bounds publishes awaiting a PubAck. Defaults to
	// DefaultWindow. How long one PubAck may take is the JetStream
	// context's async publish timeout (broker.Connect sets it), so no
	// publish waits forever on a silent connection.
	Window int
	// ConfirmDelay holds each PubAck this long before recording it in the
	// manifest, and then records it only if its chunk is still pending or
	// parked: a chunk stored meanwhile needs no confirmation, since its
	// store recorded when it was published (manifest.MarkStored). When a
	// consumer keeps up, most confirmations then write nothing. A PubAck
	// never recorded (the process died holding it) costs one harmless
	// republish by the sweeper, after its Grace, which must stay well
	// above this delay. 0 records every PubAck at once.
	ConfirmDelay time.Duration
	// Now is the clock that ages held PubAcks. Defaults to time.Now.
	Now func() time.Time
}

// Publisher publishes chunk jobs to INGEST and confirms them in the
// manifest. It is safe for concurrent use.
type Publisher struct {
	pool *pgxpool.Pool
	cfg  PublisherConfig

	// sender publishes to INGEST and verifies deduplicated PubAcks.
	sender *puback.Sender

	mu sync.Mutex
	// held are PubAcks not yet recorded, oldest first (ConfirmDelay).
	held []confirmation
}

// NewPublisher returns a publisher.
func NewPublisher(pool *pgxpool.Pool, js jetstream.JetStream, cfg PublisherConfig) *Publisher {
	if cfg.Window <= 0 {
		cfg.Window = DefaultWindow
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Publisher{pool: pool, cfg: cfg, sender: puback.NewSender(js, broker.IngestStream)}
}

// Result is what one Publish call achieved.
type Result struct {
	// Confirmed jobs are in INGEST. The manifest says so at once, or,
	// with a ConfirmDelay, once the delay has passed or Flush is called.
	Confirmed int
	// Regenerated jobs had vanished from the stream while still owed and
	// were published again under their next generation.
	Regenerated int
	// Failed jobs were refused or not confirmed; they stay owed.
	Failed []Job
	// Err is the last refusal, for logs and for telling a full stream
	// from an unreachable server (see Unavailable).
	Err error
}

// Publish sends jobs, waits for every PubAck, checks that a deduplicated
// PubAck points at a message that still exists, publishes vanished jobs
// again under a new generation, and records published_at and publish_seq
// of every confirmed job (see PublisherConfig.ConfirmDelay). It returns an
// error only when it could not record confirmations; the jobs are then in
// the stream but still count as owed, which costs at most a harmless
// republish.
func (p *Publisher) Publish(ctx context.Context, jobs []Job) (Result, error) {
	var res Result
	for start := 0; start < len(jobs); start += p.cfg.Window {
		if err := p.publishWindow(ctx, jobs[start:min(start+p.cfg.Window, len(jobs))], &res, 0); err != nil {
			return res, err
		}
	}
	return res, nil
}

// Republish publishes jobs whose messages are known to be gone under
// their next generation, so that the duplicate window cannot swallow
// them; jobs no longer pending are left alone.
func (p *Publisher) Republish(ctx context.Context, jobs []Job) (Result, error) {
	var res Result
	for start := 0; start < len(jobs); start += p.cfg.Window {
		next, err := p.regenerate(ctx, jobs[start:min(start+p.cfg.Window, len(jobs))])
		if err != nil {
			return res, err
		}
		res.Regenerated += len(next)
		if err := p.publishWindow(ctx, next, &res, 1); err != nil {
			return res, err
		}
	}
	return res, nil
}

// confirmation is a job's PubAck: the stream sequence it names, and when
// it came back (set only while it is held, see PublisherConfig).
type confirmation struct {
	job Job
	seq uint64
	at  time.Time
}

func (p *Publisher) publishWindow(ctx context.Context, jobs []Job, res *Result, depth int) error {
	msgs := make([]*nats.Msg, len(jobs))
	for i, j := range jobs {
		msgs[i] = &nats.Msg{Subject: messages.ChunkSubject(j.Source), Data: j.Raw, Header: nats.Header{}}
		msgs[i].Header.Set(jetstream.MsgIDHeader, j.MsgID())
	}
	acks, err := p.sender.Send(ctx, msgs)
	if err != nil {
		return err
	}
	var confirmed []confirmation
	var gone []Job
	for i, a := range acks {
		switch {
		case a.Err == nil:
			confirmed = append(confirmed, confirmation{job: jobs[i], seq: a.Seq})
		case errors.Is(a.Err, puback.ErrGone):
			// In a work queue a message leaves the stream when a
			// consumer acknowledges it, after committing the chunk's
			// outcome, so a gone message of a chunk regenerate finds
			// still pending was lost, not consumed.
			gone = append(gone, jobs[i])
		default:
			res.Failed, res.Err = append(res.Failed, jobs[i]), a.Err
		}
	}
	if err := p.hold(ctx, confirmed); err != nil {
		return err
	}
	res.Confirmed += len(confirmed)
	if len(gone) == 0 {
		return nil
	}
	if depth >= maxRegenerations {
		res.Failed = append(res.Failed, gone...)
		res.Err = fmt.Errorf("%d jobs vanished from INGEST %d times in a row", len(gone), depth+1)
		return nil
	}
	next, err := p.regenerate(ctx, gone)
	if err != nil {
		return err
	}
	res.Regenerated += len(next)
	return p.publishWindow(ctx, next, res, depth+1)
}

// regenerate moves vanished jobs that are still owed to their next
// publish generation and returns them; jobs settled meanwhile drop out.
func (p *Publisher) regenerate(ctx context.Context, jobs []Job) ([]Job, error) {
	ids, indexes, versions := columns(jobs)
	var next []Job
	err := manifest.NextGeneration(ctx, p.pool, manifest.Chunks{DocIDs: ids, Indexes: indexes, Versions: versions},
		func(i, gen int) {
			j := jobs[i]
			j.Gen = gen
			next = append(next, j)
		})
	if err != nil {
		return nil, fmt.Errorf("next publish generation: %w", err)
	}
	return next, nil
}

// hold records cs now, without a ConfirmDelay; with one, it keeps cs and
// records every held PubAck whose delay has passed.
func (p *Publisher) hold(ctx context.Context, cs []confirmation) error {
	if p.cfg.ConfirmDelay <= 0 {
		return p.confirm(ctx, cs)
	}
	now := p.cfg.Now()
	p.mu.Lock()
	for _, c := range cs {
		c.job.Raw, c.at = nil, now // only the key is recorded; let the bytes go
		p.held = append(p.held, c)
	}
	n := 0
	for n < len(p.held) && now.Sub(p.held[n].at) >= p.cfg.ConfirmDelay {
		n++
	}
	due := p.take(n)
	p.mu.Unlock()
	return p.record(ctx, due)
}

// Flush records every PubAck still held (see PublisherConfig.ConfirmDelay).
func (p *Publisher) Flush(ctx context.Context) error {
	p.mu.Lock()
	due := p.take(len(p.held))
	p.mu.Unlock()
	return p.record(ctx, due)
}

// take removes and returns the n oldest held PubAcks; p.mu must be held.
func (p *Publisher) take(n int) []confirmation {
	due := p.held[:n:n]
	p.held = p.held[n:]
	return due
}

// record records due; if it cannot, due is held again, ahead of the rest.
func (p *Publisher) record(ctx context.Context, due []confirmation) error {
	if err := p.confirm(ctx, due); err != nil {
		p.mu.Lock()
		p.held = append(due, p.held...)
		p.mu.Unlock()
		return err
	}
	return nil
}

// confirm records that JetStream holds each job whose chunk is still
// pending or parked; a stored chunk's store recorded it already.
//
// It records at most confirmBatch chunks a statement: a statement holds
// its rows until it ends, and a consumer storing one of them waits.
func (p *Publisher) confirm(ctx context.Context, cs []confirmation) error {
	for len(cs) > 0 {
		n := min(len(cs), confirmBatch)
		c := manifest.MakeChunks(n)
		seqs := make([]int64, n)
		for i, cf := range cs[:n] {
			c.Add(cf.job.DocID, cf.job.Index, cf.job.Version)
			seqs[i] = int64(cf.seq)
		}
		if err := manifest.ConfirmPublished(ctx, p.pool, c, seqs); err != nil {
			return fmt.Errorf("confirm %d publishes: %w", n, err)
		}
		cs = cs[n:]
	}
	return nil
}

// confirmBatch bounds the chunks one confirmation statement records: about
// a producer batch (producer.DefaultBatchDocs documents).
const confirmBatch = 256

func columns(jobs []Job) ([]string, []int32, []int64) {
	ids, indexes, versions := make([]string, len(jobs)), make([]int32, len(jobs)), make([]int64, len(jobs))
	for i, j := range jobs {
		ids[i], indexes[i], versions[i] = j.DocID, int32(j.Index), j.Version
	}
	return ids, indexes, versions
}

// Unavailable reports whether a publish error means the server could not
// be reached or did not answer, as opposed to a refusal it sent (a full
// stream, which is back-pressure to wait out, or a message it will never
// take). pkg/classify decides: a timeout, a connection down, no responder
// or a JetStream cluster without leaders is unavailability, and so is an
// error it does not recognise; an answer the server gave is a refusal.
// The sweeper stops a sweep at the first unavailability, leaving the rest
// owed for the next one, and goes on past refusals.
func Unavailable(err error) bool {
	if err == nil {
		return false
	}
	d := classify.Classify(err)
	switch d.Class {
	case classify.ClassTimeout, classify.ClassConnection, classify.ClassBrokerUnavailable, classify.ClassCanceled:
		return true
	}
	return d.Disposition == classify.Ambiguous
}
