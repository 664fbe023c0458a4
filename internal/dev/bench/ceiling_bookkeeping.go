package bench

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/rs/zerolog"

	"github.com/sluicehq/sluice/internal/ingest/pipeline"
	"github.com/sluicehq/sluice/internal/ingest/producer"
	"github.com/sluicehq/sluice/internal/store/manifest"
	"github.com/sluicehq/sluice/pkg/messages"
	"github.com/sluicehq/sluice/pkg/vectorstore"
)

// bookkeepingCeiling is the guarantees' database work alone, on a fresh
// database: first what the producer records for every chunk, in its
// batches, then what the consumer's pipeline does with each job (decode,
// screen, document lock, manifest update, completion) on concurrency
// callers in batches of batchSize, with an embedder that answers at once
// and a vector store that writes no vectors, and last the producer's
// publish confirmations, which it holds for producer.DefaultConfirmDelay
// and which then find the chunks a consumer that keeps up has stored. It
// is what the pipeline asks of PostgreSQL beyond the rows the postgres
// ceiling writes. The rate is chunks over the three parts' time.
func (r *runner) bookkeepingCeiling(ctx context.Context, jobs []benchJob) (ceilingRep, error) {
	db, err := r.in.freshDB(ctx, ceilingDims)
	if err != nil {
		return ceilingRep{}, err
	}
	defer db.drop()
	pipe, err := bookkeepingPipeline(ctx, db, r.cfg.Seed)
	if err != nil {
		return ceilingRep{}, err
	}
	// Connections are opened outside the timing, as running services' are.
	if err := warmPool(ctx, db, concurrency); err != nil {
		return ceilingRep{}, err
	}
	meter, start := readCPU(), time.Now()
	if err := recordAsProducer(ctx, db, jobs); err != nil {
		return ceilingRep{}, fmt.Errorf("producer part: %w", err)
	}
	_, err = inBatches(len(jobs), func(lo, hi int) error { return processAsConsumer(ctx, pipe, jobs, lo, hi) })
	if err != nil {
		return ceilingRep{}, fmt.Errorf("consumer part: %w", err)
	}
	if err := confirmAsProducer(ctx, db, jobs); err != nil {
		return ceilingRep{}, fmt.Errorf("producer part: %w", err)
	}
	return ceilingRep{rate: float64(len(jobs)) / time.Since(start).Seconds(), cpu: meter.since()}, nil
}

// bookkeepingPipeline is the consumer's pipeline with its default
// settings over db, embedding with instantEmbedder and storing into
// discardingStore.
func bookkeepingPipeline(ctx context.Context, db *database, seed uint64) (*pipeline.Pipeline, error) {
	store, err := vectorstore.Open(ctx, db.pool, ceilingDims)
	if err != nil {
		return nil, err
	}
	vec := unitVector(rand.New(rand.NewPCG(seed, 11)), ceilingDims)
	return pipeline.New(pipeline.Config{Model: simModel}, pipeline.Deps{Pool: db.pool,
		Store: discardingStore{store}, Embedder: instantEmbedder{vec: vec}, Log: zerolog.Nop()})
}

// recordAsProducer records jobs the way the producer records a corpus:
// per batch of producer.DefaultBatchDocs documents, the documents and the
// pending manifest rows in one transaction (first versions: nothing
// older to supersede).
func recordAsProducer(ctx context.Context, db *database, jobs []benchJob) error {
	for _, batch := range producerBatches(jobs) {
		docs, chunks, hashes, raws := producerRows(batch)
		err := pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
			if err := manifest.RecordDocuments(ctx, tx, benchSource, ceilingRunID, docs); err != nil {
				return fmt.Errorf("record documents: %w", err)
			}
			if err := manifest.RecordPending(ctx, tx, ceilingRunID, chunks, hashes, raws); err != nil {
				return fmt.Errorf("record manifest: %w", err)
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// confirmAsProducer records the PubAcks of jobs per producer batch, at
// stream sequences 1..len(jobs) as a fresh stream assigns them.
func confirmAsProducer(ctx context.Context, db *database, jobs []benchJob) error {
	seq := int64(0)
	for _, batch := range producerBatches(jobs) {
		chunks, seqs := manifest.MakeChunks(len(batch)), make([]int64, len(batch))
		for i, b := range batch {
			seq++
			chunks.Add(b.job.DocID, b.job.ChunkIndex, b.job.DocVersion)
			seqs[i] = seq
		}
		if err := manifest.ConfirmPublished(ctx, db.pool, chunks, seqs); err != nil {
			return fmt.Errorf("confirm publishes: %w", err)
		}
	}
	return nil
}

// producerBatches cuts jobs, each document's chunks in a row, into the
// producer's batches of producer.DefaultBatchDocs documents.
func producerBatches(jobs []benchJob) [][]benchJob {
	var out [][]benchJob
	lo, docs := 0, 0
	for i, b := range jobs {
		if b.job.ChunkIndex > 0 {
			continue
		}
		if docs == producer.DefaultBatchDocs {
			out, lo, docs = append(out, jobs[lo:i]), i, 0
		}
		docs++
	}
	if lo < len(jobs) {
		out = append(out, jobs[lo:])
	}
	return out
}

// producerRows are the columns the producer passes to the manifest for
// batch: each document, from its first chunk's job, as a new, pending
// document, and every job's manifest row with the job that publishes it.
func producerRows(batch []benchJob) (manifest.Documents, manifest.Chunks, []string, [][]byte) {
	var d manifest.Documents
	n := len(batch)
	chunks, hashes, raws := manifest.MakeChunks(n), make([]string, n), make([][]byte, n)
	for i, b := range batch {
		j := b.job
		if j.ChunkIndex == 0 {
			meta := "{}"
			if len(j.Metadata) > 0 {
				meta = string(j.Metadata)
			}
			d.DocIDs, d.NativeIDs, d.Hashes = append(d.DocIDs, j.DocID), append(d.NativeIDs, j.SourceNativeID), append(d.Hashes, j.ContentHash)
			d.Statuses, d.Codecs, d.Metadata = append(d.Statuses, string(manifest.DocPending)), append(d.Codecs, j.Codec), append(d.Metadata, meta)
			d.Versions, d.ChunkCounts = append(d.Versions, j.DocVersion), append(d.ChunkCounts, int32(j.ChunkCount))
		}
		chunks.Add(j.DocID, j.ChunkIndex, j.DocVersion)
		hashes[i], raws[i] = j.ContentHash, b.raw
	}
	return d, chunks, hashes, raws
}

// processAsConsumer runs the pipeline over jobs[lo:hi] as a consumer does
// over a first delivery, and fails unless every job ends stored.
func processAsConsumer(ctx context.Context, pipe *pipeline.Pipeline, jobs []benchJob, lo, hi int) error {
	batch, published := make([]*pipeline.Job, hi-lo), time.Now()
	for i, b := range jobs[lo:hi] {
		batch[i] = &pipeline.Job{Raw: b.raw, MsgID: messages.ChunkMsgID(b.job.DocID, b.job.ChunkIndex, b.job.DocVersion),
			Seq: uint64(lo + i + 1), Published: published, Delivered: 1}
	}
	if err := pipe.Process(ctx, batch); err != nil {
		return err
	}
	var errs []error
	for _, j := range batch {
		if j.Outcome == pipeline.Stored {
			continue
		}
		err := fmt.Errorf("chunk %d of %s ended %s, not stored", j.Chunk().ChunkIndex, j.Chunk().DocID, j.Outcome)
		if j.Failure != nil {
			err = fmt.Errorf("%w: %s: %w", err, j.Failure.Stage, j.Failure.Err)
		}
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// instantEmbedder answers every input at once with the same unit vector:
// the bookkeeping ceiling measures no embedding.
type instantEmbedder struct{ vec []float32 }

var _ pipeline.Embedder = instantEmbedder{}

// Embed returns the vector once per input.
func (e instantEmbedder) Embed(_ context.Context, inputs []string) ([][]float32, error) {
	out := make([][]float32, len(inputs))
	for i := range out {
		out[i] = e.vec
	}
	return out, nil
}

// Model is embed-sim's model, as the pipeline runs record.
func (e instantEmbedder) Model() string { return simModel }

// Dims is the vector's length.
func (e instantEmbedder) Dims() int { return len(e.vec) }

// discardingStore is the real vector store but for Upsert, which writes
// nothing and reports every record inserted: the bookkeeping ceiling
// leaves the vector rows to the postgres ceiling, and keeps the store's
// other statements (retain, prune, release) in the consumer's transaction.
type discardingStore struct{ vectorstore.Store }

var _ vectorstore.Store = discardingStore{}

// Upsert returns at once, every record Inserted.
func (discardingStore) Upsert(_ context.Context, _ vectorstore.DB, recs []vectorstore.Record) ([]vectorstore.Outcome, error) {
	out := make([]vectorstore.Outcome, len(recs))
	for i := range out {
		out[i] = vectorstore.Inserted
	}
	return out, nil
}
