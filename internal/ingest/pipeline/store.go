package pipeline

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sluicehq/sluice/internal/store/deadletter"
	"github.com/sluicehq/sluice/internal/store/generation"
	"github.com/sluicehq/sluice/internal/store/manifest"
	"github.com/sluicehq/sluice/pkg/classify"
	"github.com/sluicehq/sluice/pkg/vectorstore"
)

// storeAll stores jobs in one transaction. A record the store rejects is
// failed alone and the rest retried; a permanent database error for
// several rows is bisected like an embedder rejection. It returns an error
// only for a failure to reach the database at all.
func (p *Pipeline) storeAll(ctx context.Context, jobs []*Job) error {
	return p.storeWith(ctx, jobs, p.storeTx)
}

// storeWith is storeAll with the transaction tx, which stores a batch or
// fails it whole.
func (p *Pipeline) storeWith(ctx context.Context, jobs []*Job, tx func(context.Context, []*Job) error) error {
	if len(jobs) == 0 {
		return nil
	}
	err := tx(ctx, jobs)
	if err == nil {
		p.crash("after-commit-before-ack")
		return nil
	}
	var recErr *vectorstore.RecordError
	switch {
	case errors.As(err, &recErr) && recErr.Index >= 0 && recErr.Index < len(jobs):
		p.fail(jobs[recErr.Index], StageStore, recErr.Err)
		rest := make([]*Job, 0, len(jobs)-1)
		rest = append(append(rest, jobs[:recErr.Index]...), jobs[recErr.Index+1:]...)
		return p.storeWith(ctx, rest, tx)
	case classify.IsDataError(err) && len(jobs) > 1:
		p.metrics.Bisections.Inc()
		half := len(jobs) / 2
		if err := p.storeWith(ctx, jobs[:half], tx); err != nil {
			return err
		}
		return p.storeWith(ctx, jobs[half:], tx)
	}
	for _, j := range jobs {
		p.fail(j, StageStore, err)
	}
	return nil
}

// storeTx is the store transaction: lock the batch's documents, upsert the
// vectors, mark the manifest stored, and complete every document version
// whose chunks are now all stored. Once it has committed, each job's
// end-to-end latency is observed.
func (p *Pipeline) storeTx(ctx context.Context, jobs []*Job) error {
	var ready []manifest.Completed
	err := pgx.BeginFunc(ctx, p.pool, func(tx pgx.Tx) error {
		var err error
		ready, err = p.storeIn(ctx, tx, jobs)
		return err
	})
	if err != nil {
		return err
	}
	committed := p.now()
	p.observeEndToEnd(jobs, committed)
	for _, d := range ready {
		if !d.EnqueuedAt.IsZero() {
			p.metrics.DocumentReady.Observe(committed.Sub(d.EnqueuedAt).Seconds())
		}
	}
	return nil
}

// storeIn is the store transaction's work, in tx: it returns the
// document versions it completed.
func (p *Pipeline) storeIn(ctx context.Context, tx pgx.Tx, jobs []*Job) ([]manifest.Completed, error) {
	docs := distinctDocs(jobs)
	if err := p.lockDocuments(ctx, tx, docs, jobs); err != nil {
		return nil, err
	}
	if _, err := p.store.Upsert(ctx, tx, p.records(jobs)); err != nil {
		return nil, err
	}
	chunks, attempts, published := chunksOf(jobs), make([]int32, len(jobs)), make([]time.Time, len(jobs))
	for i, j := range jobs {
		attempts[i], published[i] = int32(j.Delivered), j.Published
	}
	if err := manifest.MarkStored(ctx, tx, chunks, attempts, published); err != nil {
		return nil, fmt.Errorf("mark stored: %w", err)
	}
	if _, err := deadletter.Resolve(ctx, tx, chunks, ""); err != nil {
		return nil, err
	}
	if err := generation.Enqueue(ctx, tx, laterOwed(jobs)); err != nil {
		return nil, err
	}
	ready, err := p.complete(ctx, tx, docs)
	if err != nil {
		return nil, err
	}
	for _, j := range jobs {
		j.Outcome = Stored
	}
	return ready, nil
}

// observeEndToEnd observes, for each job stored in a transaction that
// committed at committed, the time from when JetStream took its message
// (the delivered message's stream timestamp, the published_at MarkStored
// records) to the commit. The job's own published_at is when its
// producer planned it, before the publish and before any republish, and
// a PubAck's recording time can follow the store: neither is when
// JetStream had the job. A job without a stream timestamp (the
// replayer's) is not observed.
func (p *Pipeline) observeEndToEnd(jobs []*Job, committed time.Time) {
	for _, j := range jobs {
		if !j.Published.IsZero() {
			p.metrics.EndToEnd.Observe(committed.Sub(j.Published).Seconds())
		}
	}
}

// lockDocuments locks the batch's documents in a fixed order, which
// serialises the completion check per document without deadlocks between
// workers. When a document is being re-indexed, the served version's rows
// are about to be replaced by the new version's: they are retained, so
// they stay searchable until it is complete.
func (p *Pipeline) lockDocuments(ctx context.Context, tx pgx.Tx, docs []string, jobs []*Job) error {
	reindexing, err := manifest.LockDocuments(ctx, tx, docs)
	if err != nil {
		return fmt.Errorf("lock documents: %w", err)
	}
	if !reindexing {
		return nil
	}
	ids, indexes := make([]string, len(jobs)), make([]int32, len(jobs))
	for i, j := range jobs {
		ids[i], indexes[i] = j.chunk.DocID, int32(j.chunk.ChunkIndex)
	}
	return p.store.Retain(ctx, tx, ids, indexes)
}

// complete moves each document to ready once every chunk of its current
// version is stored — serving that version from then on, and pruning what
// older versions left behind — or to failed while any is parked, when
// search keeps serving the version it replaces.
func (p *Pipeline) complete(ctx context.Context, tx pgx.Tx, docs []string) ([]manifest.Completed, error) {
	ready, err := manifest.CompleteDocuments(ctx, tx, docs)
	if err != nil {
		return nil, err
	}
	released := make([]string, 0, len(ready))
	for _, r := range ready {
		// Only a later version can leave chunks beyond its count behind.
		if !r.Later {
			continue
		}
		if _, err := p.store.PruneVersion(ctx, tx, r.DocID, r.ChunkCount); err != nil {
			return nil, fmt.Errorf("prune %s: %w", r.DocID, err)
		}
		if _, err := vectorstore.PruneLaterGenerations(ctx, tx, r.DocID, r.ChunkCount); err != nil {
			return nil, err
		}
		released = append(released, r.DocID)
	}
	return ready, p.store.Release(ctx, tx, released)
}

// records are the store's records of jobs with their vectors.
func (p *Pipeline) records(jobs []*Job) []vectorstore.Record {
	recs := make([]vectorstore.Record, len(jobs))
	for i, j := range jobs {
		c := &j.chunk
		recs[i] = vectorstore.Record{DocID: c.DocID, ChunkIndex: c.ChunkIndex, Version: c.DocVersion,
			ContentHash: c.ContentHash, Model: p.cfg.Model, Embedding: j.vector, Text: c.Text, Metadata: c.Metadata}
	}
	return recs
}

// laterOwed is what the stored jobs owe every later index generation
// (generation.Enqueue): the pipeline writes generation 1, and the
// backfill the others, from the text this transaction stores.
func laterOwed(jobs []*Job) []generation.Stored {
	out := make([]generation.Stored, len(jobs))
	for i, j := range jobs {
		c := &j.chunk
		out[i] = generation.Stored{DocID: c.DocID, ChunkIndex: c.ChunkIndex, Version: c.DocVersion, ContentHash: c.ContentHash, SourceID: c.SourceID}
	}
	return out
}

func distinctDocs(jobs []*Job) []string {
	seen := make(map[string]bool, len(jobs))
	docs := make([]string, 0, len(jobs))
	for _, j := range jobs {
		if !seen[j.chunk.DocID] {
			seen[j.chunk.DocID] = true
			docs = append(docs, j.chunk.DocID)
		}
	}
	sort.Strings(docs)
	return docs
}
