package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/internal/content/corpus"
	"github.com/sluicehq/sluice/internal/provider/embedder"
	"github.com/sluicehq/sluice/pkg/messages"
)

// Ceiling names.
const (
	ceilingEmbedFloat  = "embed-float"
	ceilingEmbedBase64 = "embed-base64"
	ceilingJetStream   = "jetstream"
	ceilingPostgres    = "postgres"
	ceilingBookkeeping = "bookkeeping"
)

// The three parts again over the pipeline-docs run's chunks, measured
// when that run is selected: its chunks hold more than twice the text of
// the single-chunk corpus's records (1,706 bytes on average against
// 763), and a part's CPU grows with the text it moves, so that the
// documents' CPU is set against parts that moved as much.
const (
	ceilingEmbedBase64Docs = "embed-base64-docs"
	ceilingJetStreamDocs   = "jetstream-docs"
	ceilingPostgresDocs    = "postgres-docs"
	// ceilingBookkeepingDocs is the bookkeeping over the same chunks,
	// each in its document: what the guarantees cost on documents of
	// many chunks, where a document's statements are shared by its
	// chunks.
	ceilingBookkeepingDocs = "bookkeeping-docs"
)

// ceilingNames are the ceilings in the order they run and are reported.
var ceilingNames = []string{ceilingEmbedFloat, ceilingEmbedBase64, ceilingJetStream, ceilingPostgres, ceilingBookkeeping,
	ceilingEmbedBase64Docs, ceilingJetStreamDocs, ceilingPostgresDocs, ceilingBookkeepingDocs}

// ceilingParts are the parts a chunk passes through once each: the
// embedder as the consumer asks it (base64), JetStream and the vector
// write. The combined ceiling is theirs, with and without bookkeeping.
var ceilingParts = []string{ceilingEmbedBase64, ceilingJetStream, ceilingPostgres}

// ceilingDocsParts are ceilingParts over the pipeline-docs run's chunks.
var ceilingDocsParts = []string{ceilingEmbedBase64Docs, ceilingJetStreamDocs, ceilingPostgresDocs}

// DocsFourParts names the ceilings of the four parts over the
// pipeline-docs run's chunks: the three and their bookkeeping.
var DocsFourParts = []string{ceilingEmbedBase64Docs, ceilingJetStreamDocs, ceilingPostgresDocs, ceilingBookkeepingDocs}

// ceilingUnits is what each ceiling counts per second.
var ceilingUnits = map[string]string{ceilingEmbedFloat: "vectors", ceilingEmbedBase64: "vectors",
	ceilingJetStream: "messages", ceilingPostgres: "rows", ceilingBookkeeping: "chunks",
	ceilingEmbedBase64Docs: "vectors", ceilingJetStreamDocs: "messages", ceilingPostgresDocs: "rows", ceilingBookkeepingDocs: "chunks"}

// ceilingDims is the dimension of the ceilings: the baseline pipeline's.
const ceilingDims = 384

// batchSize is the consumer's default BATCH_SIZE and EMBED_MAX_INPUTS, and
// so the batch of every ceiling.
const batchSize = 64

// concurrency is how many batches the pipeline has in flight: its consumer
// processes' pull loops. The ceilings use as many callers.
const concurrency = consumers * workersPerConsumer

// ceilingRep is one repetition of one ceiling.
type ceilingRep struct {
	// rate is items per second.
	rate float64
	// cpu is the CPU the part used, client included: this process,
	// PostgreSQL, NATS and embed-sim.
	cpu cpuUse
}

// ceilings measures each part alone, one repetition, with the pipeline's
// texts, message sizes, dims, batch size and concurrency, by ceiling name.
func (r *runner) ceilings(ctx context.Context) (map[string]ceilingRep, error) {
	defer r.killAll()
	path, err := r.corpus(r.cfg.Chunks, 0)
	if err != nil {
		return nil, err
	}
	recs, err := readCorpus(path)
	if err != nil {
		return nil, err
	}
	out := map[string]ceilingRep{}
	for _, enc := range []string{embedder.EncodingFloat, embedder.EncodingBase64} {
		if out["embed-"+enc], err = r.embedCeiling(ctx, recs, enc); err != nil {
			return nil, fmt.Errorf("embed ceiling (%s): %w", enc, err)
		}
	}
	jobs, err := encodeJobs(recs)
	if err != nil {
		return nil, err
	}
	if out[ceilingJetStream], err = r.jetStreamCeiling(ctx, jobs); err != nil {
		return nil, fmt.Errorf("jetstream ceiling: %w", err)
	}
	if out[ceilingPostgres], err = r.postgresCeiling(ctx, jobs); err != nil {
		return nil, fmt.Errorf("postgres ceiling: %w", err)
	}
	if out[ceilingBookkeeping], err = r.bookkeepingCeiling(ctx, jobs); err != nil {
		return nil, fmt.Errorf("bookkeeping ceiling: %w", err)
	}
	if r.docsPath != "" {
		if err := r.docsCeilings(ctx, out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// docsCeilings measures the three parts and the bookkeeping over the
// first Config.Chunks chunks of the pipeline-docs run's corpus, each
// chunk in its document, into out.
func (r *runner) docsCeilings(ctx context.Context, out map[string]ceilingRep) error {
	recs, err := docsChunkRecords(r.docsPath, r.cfg.Chunks)
	if err != nil {
		return err
	}
	if out[ceilingEmbedBase64Docs], err = r.embedCeiling(ctx, recs, embedder.EncodingBase64); err != nil {
		return fmt.Errorf("embed ceiling (documents' chunks): %w", err)
	}
	jobs, err := encodeJobs(recs)
	if err != nil {
		return err
	}
	if out[ceilingJetStreamDocs], err = r.jetStreamCeiling(ctx, jobs); err != nil {
		return fmt.Errorf("jetstream ceiling (documents' chunks): %w", err)
	}
	if out[ceilingPostgresDocs], err = r.postgresCeiling(ctx, jobs); err != nil {
		return fmt.Errorf("postgres ceiling (documents' chunks): %w", err)
	}
	if out[ceilingBookkeepingDocs], err = r.bookkeepingCeiling(ctx, jobs); err != nil {
		return fmt.Errorf("bookkeeping ceiling (documents' chunks): %w", err)
	}
	return nil
}

// inBatches runs fn over [0, n) in batches of batchSize on concurrency
// goroutines and returns the elapsed time and the first error.
func inBatches(n int, fn func(lo, hi int) error) (time.Duration, error) {
	var next atomic.Int64
	var once sync.Once
	var first error
	var wg sync.WaitGroup
	start := time.Now()
	for range concurrency {
		wg.Go(func() {
			for {
				lo := int(next.Add(batchSize)) - batchSize
				if lo >= n {
					return
				}
				if err := fn(lo, min(lo+batchSize, n)); err != nil {
					once.Do(func() { first = err })
					return
				}
			}
		})
	}
	wg.Wait()
	return time.Since(start), first
}

// embedCeiling is embed-sim alone: vectors per second through the
// production client, with no retries or breaker in the way.
func (r *runner) embedCeiling(ctx context.Context, recs []jsonlRecord, encoding string) (ceilingRep, error) {
	sim, url, err := startSim(r.start, r.bins, r.work, ceilingDims, r.cfg.Seed, simFaults{})
	if err != nil {
		return ceilingRep{}, err
	}
	defer sim.kill()
	client, err := embedder.NewOpenAI(embedder.Config{URL: url, Model: simModel, Dims: ceilingDims, Encoding: encoding})
	if err != nil {
		return ceilingRep{}, err
	}
	texts := make([]string, len(recs))
	for i, rec := range recs {
		texts[i] = rec.Text
	}
	// One warm-up call opens a connection, so the timing does not include it.
	if _, err := client.Embed(ctx, texts[:1]); err != nil {
		return ceilingRep{}, err
	}
	meter, simCPU := readCPU(), sim.cpu()
	elapsed, err := inBatches(len(texts), func(lo, hi int) error {
		_, err := client.Embed(ctx, texts[lo:hi])
		return err
	})
	if err != nil {
		return ceilingRep{}, err
	}
	use := meter.since()
	use.sim = (sim.cpu() - simCPU).Seconds()
	return ceilingRep{rate: float64(len(texts)) / elapsed.Seconds(), cpu: use}, nil
}

// benchJob is a corpus record as the producer would publish it.
type benchJob struct {
	job messages.ChunkJob
	raw []byte
}

// ceilingRunID is the run of the ceilings' chunk jobs.
const ceilingRunID = "ceiling"

// encodeJobs builds the chunk jobs the producer would publish for recs, so
// that the ceilings move messages of the pipeline's own size: a JSONL
// record is read as UTF-8, and is one document of one chunk.
func encodeJobs(recs []jsonlRecord) ([]benchJob, error) {
	now := time.Now().UTC()
	out := make([]benchJob, len(recs))
	for i, rec := range recs {
		meta, err := json.Marshal(rec.Metadata)
		if err != nil {
			return nil, err
		}
		if meta, err = messages.CanonicalJSON(meta); err != nil {
			return nil, err
		}
		hash, err := messages.ContentHash(rec.Text, meta)
		if err != nil {
			return nil, err
		}
		native, index, count := rec.ID, 0, 1
		if rec.doc != "" {
			native, index, count = rec.doc, rec.index, rec.count
		}
		j := messages.ChunkJob{Schema: messages.ChunkJobSchema, DocID: messages.DocID(benchSource, native), ChunkIndex: index,
			DocVersion: 1, ChunkCount: count, SourceID: benchSource, SourceNativeID: messages.StorableNativeID(native),
			RunID: ceilingRunID, ContentHash: hash, Text: rec.Text, Metadata: meta, Codec: corpus.CodecUTF8, PublishedAt: now}
		raw, err := j.Encode()
		if err != nil {
			return nil, err
		}
		out[i] = benchJob{job: j, raw: raw}
	}
	return out, nil
}
