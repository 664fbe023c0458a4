package main

import (
	"context"
	"encoding/json"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"

	"github.com/sluicehq/sluice/internal/provider/embedder"
	"github.com/sluicehq/sluice/pkg/classify"
	"github.com/sluicehq/sluice/pkg/vectorstore"
)

// chunkArgs is one chunk's job.
type chunkArgs struct {
	DocID       string          `json:"doc_id"`
	ChunkIndex  int             `json:"chunk_index"`
	Version     int64           `json:"version"`
	ContentHash string          `json:"content_hash"`
	Text        string          `json:"text"`
	Metadata    json.RawMessage `json:"metadata,omitempty"`
}

// Kind implements river.JobArgs.
func (chunkArgs) Kind() string { return "sluice_embed_chunk" }

// embedWorker embeds one chunk and upserts its vector.
type embedWorker struct {
	river.WorkerDefaults[chunkArgs]
	emb   *embedder.OpenAI
	store *vectorstore.Postgres
	pool  *pgxpool.Pool
}

// Work implements river.Worker. A data error (a 4xx for the input, a
// vector the store rejects) cancels the job at once, as Sluice parks it;
// anything else is returned for River to retry with its backoff, and
// River discards the job once its attempts run out.
func (w *embedWorker) Work(ctx context.Context, job *river.Job[chunkArgs]) error {
	a := job.Args
	vecs, err := w.emb.Embed(ctx, []string{a.Text})
	if err != nil {
		return settle(err)
	}
	_, err = w.store.Upsert(ctx, w.pool, []vectorstore.Record{{DocID: a.DocID, ChunkIndex: a.ChunkIndex,
		Version: a.Version, ContentHash: a.ContentHash, Model: w.emb.Model(), Embedding: vecs[0],
		Text: a.Text, Metadata: a.Metadata}})
	return settle(err)
}

func settle(err error) error {
	if err != nil && classify.IsDataError(err) {
		return river.JobCancel(err)
	}
	return err
}
