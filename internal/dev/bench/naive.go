package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/sluicehq/sluice/internal/platform/broker"
	"github.com/sluicehq/sluice/internal/provider/embedder"
	"github.com/sluicehq/sluice/internal/store/manifest"
	"github.com/sluicehq/sluice/pkg/messages"
)

// The naive build does the pipeline's job the obvious way, to show what
// batching buys: one synchronous publish per chunk, fetch one message at a
// time, one HTTP call per chunk (float encoding, the API's default), and
// one commit per row. It writes the same documents, manifest and vectors
// as the services, so that it is measured the same way.

// naiveReady is the line a naive consumer writes once it pulls.
const naiveReady = "naive consumer ready"

// naiveProduce records and publishes the corpus one chunk at a time.
func naiveProduce(ctx context.Context, getenv func(string) string) error {
	pool, err := pgxpool.New(ctx, getenv("DATABASE_URL"))
	if err != nil {
		return err
	}
	defer pool.Close()
	nc, err := nats.Connect(getenv("NATS_URL"))
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	f, err := os.Open(getenv(corpusEnv))
	if err != nil {
		return err
	}
	defer f.Close()
	runID := "naive-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	if _, err := pool.Exec(ctx, `INSERT INTO ingest_runs (run_id, source_id) VALUES ($1, $2)`, runID, benchSource); err != nil {
		return err
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var rec jsonlRecord
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			return fmt.Errorf("corpus: %w", err)
		}
		if err := naivePublish(ctx, pool, js, runID, rec); err != nil {
			return err
		}
	}
	return sc.Err()
}

func naivePublish(ctx context.Context, pool *pgxpool.Pool, js jetstream.JetStream, runID string, rec jsonlRecord) error {
	meta, err := json.Marshal(rec.Metadata)
	if err != nil {
		return err
	}
	if meta, err = messages.CanonicalJSON(meta); err != nil {
		return err
	}
	hash, err := messages.ContentHash(rec.Text, meta)
	if err != nil {
		return err
	}
	job := messages.ChunkJob{Schema: messages.ChunkJobSchema, DocID: messages.DocID(benchSource, rec.ID),
		DocVersion: 1, ChunkCount: 1, SourceID: benchSource, SourceNativeID: rec.ID, RunID: runID,
		ContentHash: hash, Text: rec.Text, Metadata: meta, PublishedAt: time.Now().UTC()}
	raw, err := job.Encode()
	if err != nil {
		return err
	}
	if _, err := pool.Exec(ctx, `
		INSERT INTO documents (doc_id, source_id, source_native_id, run_id, version, content_hash, chunk_count, status, metadata)
		VALUES ($1, $2, $3, $4, 1, $5, 1, $7, $6::jsonb)`,
		job.DocID, benchSource, rec.ID, runID, hash, string(meta), manifest.DocPending); err != nil {
		return fmt.Errorf("insert document: %w", err)
	}
	if _, err := pool.Exec(ctx, `
		INSERT INTO ingest_manifest (doc_id, chunk_index, version, content_hash, status, run_id, job, published_at)
		VALUES ($1, 0, 1, $2, $5, $3, $4, now())`, job.DocID, hash, runID, raw, manifest.Pending); err != nil {
		return fmt.Errorf("insert manifest: %w", err)
	}
	_, err = js.Publish(ctx, messages.ChunkSubject(benchSource), raw,
		jetstream.WithMsgID(messages.ChunkMsgID(job.DocID, 0, 1)))
	return err
}

// naiveConsume pulls one message at a time on workersPerConsumer loops
// until ctx ends.
func naiveConsume(ctx context.Context, getenv func(string) string) error {
	dims, err := strconv.Atoi(getenv("EMBEDDING_DIMS"))
	if err != nil {
		return fmt.Errorf("EMBEDDING_DIMS: %w", err)
	}
	pool, err := pgxpool.New(ctx, getenv("DATABASE_URL"))
	if err != nil {
		return err
	}
	defer pool.Close()
	var mode string
	if err := pool.QueryRow(ctx, `SELECT value FROM sluice_settings WHERE key = 'vector_type'`).Scan(&mode); err != nil {
		return err
	}
	nc, err := nats.Connect(getenv("NATS_URL"))
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	cons, err := js.Consumer(ctx, broker.IngestStream, broker.WorkersConsumer)
	if err != nil {
		return err
	}
	emb, err := embedder.NewOpenAI(embedder.Config{URL: getenv("EMBEDDER_URL"), Model: simModel, Dims: dims, Encoding: embedder.EncodingFloat})
	if err != nil {
		return err
	}
	w := &naiveWorker{pool: pool, emb: emb, insert: naiveInsertSQL(mode, dims)}
	fmt.Fprintln(os.Stderr, naiveReady)
	var wg sync.WaitGroup
	errs := make(chan error, workersPerConsumer)
	for range workersPerConsumer {
		wg.Go(func() { errs <- w.loop(ctx, cons) })
	}
	wg.Wait()
	close(errs)
	var all []error
	for err := range errs {
		all = append(all, err)
	}
	return errors.Join(all...)
}

type naiveWorker struct {
	pool   *pgxpool.Pool
	emb    *embedder.OpenAI
	insert string
}

func (w *naiveWorker) loop(ctx context.Context, cons jetstream.Consumer) error {
	for ctx.Err() == nil {
		batch, err := cons.Fetch(1, jetstream.FetchMaxWait(250*time.Millisecond))
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		for msg := range batch.Messages() {
			if err := w.handle(context.WithoutCancel(ctx), msg); err != nil {
				fmt.Fprintln(os.Stderr, "naive consumer:", err)
				_ = msg.Nak()
				continue
			}
			_ = msg.Ack()
		}
	}
	return nil
}

// handle embeds one chunk and stores it with its manifest row in one
// transaction of its own.
func (w *naiveWorker) handle(ctx context.Context, msg jetstream.Msg) error {
	job, err := messages.DecodeChunkJob(msg.Data())
	if err != nil {
		return err
	}
	vecs, err := w.emb.Embed(ctx, []string{job.Text})
	if err != nil {
		return err
	}
	meta := "{}"
	if len(job.Metadata) > 0 {
		meta = string(job.Metadata)
	}
	// published_at is the message's stream timestamp, as the pipeline's
	// store records it, so that both latencies are measured alike.
	mdata, err := msg.Metadata()
	if err != nil {
		return err
	}
	return pgx.BeginFunc(ctx, w.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, w.insert, job.DocID, job.ChunkIndex, job.DocVersion, job.ContentHash,
			w.emb.Model(), vecs[0], job.Text, meta); err != nil {
			return fmt.Errorf("insert vector: %w", err)
		}
		_, err := tx.Exec(ctx, `
			UPDATE ingest_manifest SET status = $4, attempts = attempts + 1, published_at = $5, updated_at = now()
			WHERE doc_id = $1 AND chunk_index = $2 AND version = $3`,
			job.DocID, job.ChunkIndex, job.DocVersion, manifest.Stored, mdata.Timestamp)
		return err
	})
}

// naiveInsertSQL is a one-row insert, the vector passed as a real[]
// parameter and cast to the column type.
func naiveInsertSQL(mode string, dims int) string {
	cast := ""
	if mode == "vector" {
		cast = "::vector"
	}
	return fmt.Sprintf(`
		INSERT INTO chunk_embeddings (doc_id, chunk_index, version, content_hash, model, dims, embedding, text, metadata)
		VALUES ($1, $2, $3, $4, $5, %d, $6::real[]%s, $7, $8::jsonb)
		ON CONFLICT (doc_id, chunk_index) DO UPDATE SET version = EXCLUDED.version, content_hash = EXCLUDED.content_hash,
		    embedding = EXCLUDED.embedding, text = EXCLUDED.text, metadata = EXCLUDED.metadata, updated_at = now()`, dims, cast)
}
