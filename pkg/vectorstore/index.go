package vectorstore

import (
	"context"
	"errors"
	"fmt"
)

// HNSWIndex is the name of the index BuildIndex creates on
// chunk_embeddings.embedding.
const HNSWIndex = "chunk_embeddings_embedding_hnsw"

// ErrNoVectorIndex is returned by BuildIndex on a store whose embedding
// column is real[]: no PostgreSQL index serves cosine distance over arrays,
// and Search scans every row.
var ErrNoVectorIndex = errors.New("vectorstore: no vector index without pgvector")

// BuildIndex builds pgvector's HNSW index for cosine distance on
// chunk_embeddings.embedding, named HNSWIndex, with pgvector's default
// graph parameters (m 16, ef_construction 64), unless it exists already.
// It then refreshes the planner statistics of the two tables Search reads,
// chunk_embeddings and documents: until they count the loaded rows (which
// autovacuum may take a while to do) the planner keeps scanning every row.
//
// Build it after a bulk load rather than before: building over rows already
// there is much faster than growing the graph one upsert at a time, and
// upserts stay fast while the load runs. Later upserts keep the index
// current. The build holds a lock that blocks writes to chunk_embeddings
// until it commits; it runs on db, so a transaction makes it part of that
// transaction. More maintenance_work_mem (a session setting) makes large
// builds faster.
//
// With the index Search is approximate, and an index scan yields at most
// hnsw.ef_search rows (40 unless the session sets it): a search for more
// hits than that, or one whose filters drop candidates, returns fewer than
// K unless the session sets hnsw.ef_search ≥ K or hnsw.iterative_scan =
// strict_order. A larger ef_search also raises recall.
//
// On a real[] store, or a later generation's, BuildIndex returns
// ErrNoVectorIndex and changes nothing.
func (p *Postgres) BuildIndex(ctx context.Context, db DB) error {
	if p.generation != firstGeneration {
		return fmt.Errorf("%w: generation %d's index is a partial index on %s, which only the schema's owner may build", ErrNoVectorIndex, p.generation, GenerationTable)
	}
	if p.mode != ModeVector {
		return fmt.Errorf("%w: chunk_embeddings.embedding is %s; install pgvector and migrate a new database to index it", ErrNoVectorIndex, p.mode)
	}
	_, err := db.Exec(ctx, `CREATE INDEX IF NOT EXISTS `+HNSWIndex+` ON chunk_embeddings USING hnsw (embedding vector_cosine_ops)`)
	if err != nil {
		return fmt.Errorf("vectorstore: build index %s: %w", HNSWIndex, err)
	}
	if _, err := db.Exec(ctx, `ANALYZE chunk_embeddings, documents`); err != nil {
		return fmt.Errorf("vectorstore: analyze after building %s: %w", HNSWIndex, err)
	}
	return nil
}
