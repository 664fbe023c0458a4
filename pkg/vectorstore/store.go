package vectorstore

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// DB is what the store runs statements on: a pool, a connection or — most
// often — the caller's transaction, so that the upsert commits atomically
// with the caller's manifest update. *pgxpool.Pool, *pgx.Conn and pgx.Tx all
// satisfy it.
type DB interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// Record is one chunk's embedding as the pipeline hands it to Upsert.
type Record struct {
	// DocID is the document the chunk belongs to.
	DocID string
	// ChunkIndex is the chunk's position in its document, from 0.
	ChunkIndex int
	// Version is the document version the chunk was cut from, from 1.
	// Upsert never lets a lower version replace a higher one.
	Version int64
	// ContentHash identifies the chunk's content. The same version and
	// hash as the stored row makes the record a no-op.
	ContentHash string
	// Model is the embedding model that produced Embedding.
	Model string
	// Embedding is the vector; its length must be the store's Dims.
	Embedding []float32
	// Text is the chunk text, returned by Search.
	Text string
	// Metadata is a JSON object stored beside the vector, or nil for {}.
	Metadata json.RawMessage
}

// Outcome is what Upsert did with one record.
type Outcome int

// The outcomes of Upsert. The zero Outcome is deliberately none of them, so
// that a forgotten assignment cannot pass for a result.
const (
	// Inserted means the chunk had no row; now it has this one.
	Inserted Outcome = iota + 1
	// Updated means the record replaced a row of an older version, or of
	// the same version with a different content hash.
	Updated
	// Unchanged means the stored row already has this version and content
	// hash; nothing was written and its updated_at did not move.
	Unchanged
	// Stale means the stored row has a newer version; the record was
	// dropped and the newer row kept.
	Stale
)

// String returns the outcome's lowercase name, for logs and metric labels.
func (o Outcome) String() string {
	switch o {
	case Inserted:
		return "inserted"
	case Updated:
		return "updated"
	case Unchanged:
		return "unchanged"
	case Stale:
		return "stale"
	}
	return fmt.Sprintf("outcome(%d)", int(o))
}

// Hit is one search result.
type Hit struct {
	// DocID and ChunkIndex identify the chunk.
	DocID      string
	ChunkIndex int
	// Version is the document version the chunk belongs to, always the
	// document's current one.
	Version int64
	// Text is the chunk text.
	Text string
	// Metadata is the JSON object stored with the chunk ({} when none was).
	Metadata json.RawMessage
	// Score is the cosine similarity between the query and the chunk, in
	// [-1, 1]; higher is nearer. A stored zero vector has no direction and
	// scores 0, after every other hit.
	Score float64
}

// Search limits.
const (
	// DefaultSearchK is the number of hits Search returns when K is 0.
	DefaultSearchK = 10
	// MaxSearchK is the largest K Search accepts.
	MaxSearchK = 1000
)

// SearchOptions narrows a search.
type SearchOptions struct {
	// K is the number of hits to return. Defaults to DefaultSearchK; at most
	// MaxSearchK.
	K int
	// SourceID, when set, keeps only chunks of documents from that source
	// (documents.source_id). Defaults to every source.
	SourceID string
}

// Store is a vector store for chunk embeddings. Every implementation must
// pass storetest.Run.
type Store interface {
	// Upsert writes recs in one multi-row statement and reports each
	// record's outcome, in input order. Empty recs is a no-op (nil, nil).
	// Before touching the database it rejects an invalid record with a
	// *RecordError (see Validate) and a repeated (doc_id, chunk_index) with
	// a *DuplicateError; a database error is returned wrapped, never
	// reclassified.
	Upsert(ctx context.Context, db DB, recs []Record) ([]Outcome, error)
	// PruneVersion deletes a document's chunks at index >= chunkCount (what
	// remains of an older, longer version) and returns how many went. Call
	// it only once the new version is complete, in the transaction that
	// marks the document ready, so that the document is never half-indexed.
	PruneVersion(ctx context.Context, db DB, docID string, chunkCount int) (int64, error)
	// Retain keeps the rows of the given chunks that search serves while a
	// newer version of their document is indexed (documents.live_version),
	// so that Upsert may replace them; Release drops what was kept once
	// the new version is complete or gone.
	Retain(ctx context.Context, db DB, docIDs []string, indexes []int32) error
	Release(ctx context.Context, db DB, docIDs []string) error
	// Search returns the K nearest chunks to query by cosine similarity,
	// nearest first (ties by doc_id, then chunk_index): the chunks of
	// documents whose status is ready, at their current version, and
	// while a document's new version is being indexed, those of the
	// version it replaces (live_version), retained ones included. A query of
	// the wrong length, with NaN or ±Inf, or of zero norm is a permanent
	// classify error.
	Search(ctx context.Context, db DB, query []float32, opts SearchOptions) ([]Hit, error)
	// Dims is the configured embedding dimension.
	Dims() int
}
