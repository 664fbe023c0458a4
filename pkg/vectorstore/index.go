package vectorstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
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
// A later generation's store builds that generation's index,
// BuildGenerationIndex. On a real[] store BuildIndex returns
// ErrNoVectorIndex and changes nothing.
func (p *Postgres) BuildIndex(ctx context.Context, db DB) error {
	if p.generation != firstGeneration && p.mode == ModeVector {
		_, err := BuildGenerationIndex(ctx, db, p.generation)
		return err
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

// GenerationIndex is the name of generation gen's nearest-neighbour
// index, for a generation after the first.
func GenerationIndex(gen int) string {
	return "generation_embeddings_g" + strconv.Itoa(gen) + "_hnsw"
}

// BuildGenerationIndex builds generation gen's nearest-neighbour index,
// unless it exists already, and returns its name (GenerationIndex): an
// HNSW index for cosine distance on the embedding cast to the
// generation's dimension, partial to the generation's rows of
// GenerationTable, the expression its searches order by. It then
// refreshes the table's planner statistics.
//
// Only the table's owner may build an index, so it runs the owner's
// function build_generation_index (migration 27), which only the
// operator's role may execute. The function refuses generation 1
// (ErrFirstGeneration here: chunk_embeddings has BuildIndex), an unknown
// or dropped generation, a database without pgvector, and more than
// 2,000 dimensions (pgvector's limit for HNSW). What BuildIndex says of
// when to build, the lock and ef_search holds here too: the build blocks
// writes to GenerationTable, every later generation's, until its
// transaction commits.
func BuildGenerationIndex(ctx context.Context, db DB, gen int) (string, error) {
	if gen <= firstGeneration {
		return "", fmt.Errorf("%w: generation %d's index is chunk_embeddings', built by BuildIndex", ErrFirstGeneration, gen)
	}
	var name string
	if err := db.QueryRow(ctx, `SELECT build_generation_index($1)`, gen).Scan(&name); err != nil {
		return "", fmt.Errorf("vectorstore: build generation %d's index: %w", gen, err)
	}
	return name, nil
}

// DropGenerationIndex removes generation gen's nearest-neighbour index
// through the owner's function drop_generation_index, and reports
// whether there was one.
func DropGenerationIndex(ctx context.Context, db DB, gen int) (bool, error) {
	if gen <= firstGeneration {
		return false, fmt.Errorf("%w: generation %d has no partial index", ErrFirstGeneration, gen)
	}
	var dropped bool
	if err := db.QueryRow(ctx, `SELECT drop_generation_index($1)`, gen).Scan(&dropped); err != nil {
		return false, fmt.Errorf("vectorstore: drop generation %d's index: %w", gen, err)
	}
	return dropped, nil
}

// HasGenerationIndex reports whether generation gen's nearest-neighbour
// index exists; generation 1's is HNSWIndex.
func HasGenerationIndex(ctx context.Context, db DB, gen int) (bool, error) {
	name := HNSWIndex
	if gen > firstGeneration {
		name = GenerationIndex(gen)
	}
	var ok bool
	if err := db.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, name).Scan(&ok); err != nil {
		return false, fmt.Errorf("vectorstore: look for index %s: %w", name, err)
	}
	return ok, nil
}
