package vectorstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5"
)

// GenerationTable holds the vectors of every index generation after the
// first, keyed by (generation, doc_id, chunk_index), side by side whatever
// their dimensions (migration 25). The first generation's vectors stay in
// chunk_embeddings.
const GenerationTable = "generation_embeddings"

// firstGeneration is the generation whose vectors are chunk_embeddings':
// what the database held before generations existed.
const firstGeneration = 1

// ErrFirstGeneration is returned for what only a later generation's
// vectors support: dropping them (the pipeline still writes the first
// generation's) or retaining a served version (blue/green, which the
// first generation does with chunk_embeddings_previous).
var ErrFirstGeneration = errors.New("vectorstore: not for generation 1")

// ErrNoRetention is returned by Retain and Release on a later
// generation's store: its rows are written by nobody yet but tests, and
// a served version is not kept aside while a new one replaces it.
var ErrNoRetention = errors.New("vectorstore: a later generation does not retain served versions")

// target is where a generation's vectors are: the table, and for a later
// generation the generation column and its value.
type target struct {
	table, column, value string
	generation           int
}

func targetOf(gen int) target {
	if gen == firstGeneration {
		return target{table: "chunk_embeddings", generation: gen}
	}
	g := strconv.Itoa(gen)
	return target{table: GenerationTable, column: "generation, ", value: g + ", ", generation: gen}
}

// where is the condition, with a trailing AND, that keeps alias's rows to
// the target's generation; empty for chunk_embeddings.
func (t target) where(alias string) string {
	if t.column == "" {
		return ""
	}
	return alias + ".generation = " + strconv.Itoa(t.generation) + " AND "
}

func pruneStatement(t target) string {
	return `DELETE FROM ` + t.table + ` c WHERE ` + t.where("c") + `c.doc_id = $1 AND c.chunk_index >= $2`
}

// OpenGeneration returns the store of index generation gen, whose vectors
// have dims dimensions: for generation 1 what Open returns (dims must be
// the migrated dimension), for a later one a store on GenerationTable
// bound to gen. It reads the vector column's type from sluice_settings;
// the generation's registration (package internal/store/generation) is the
// caller's to check.
func OpenGeneration(ctx context.Context, db DB, gen, dims int) (*Postgres, error) {
	if gen == firstGeneration {
		return Open(ctx, db, dims)
	}
	if gen < firstGeneration {
		return nil, fmt.Errorf("vectorstore: generation %d: generations are numbered from 1", gen)
	}
	var mode string
	if err := db.QueryRow(ctx, `SELECT value FROM sluice_settings WHERE key = 'vector_type'`).Scan(&mode); err != nil {
		return nil, settingsError(err)
	}
	return newPostgres(dims, mode, gen)
}

// Generation is the index generation the store reads and writes.
func (p *Postgres) Generation() int { return p.generation }

// DropGeneration deletes every vector of generation gen and returns how
// many went. It refuses generation 1 (ErrFirstGeneration): the pipeline
// writes chunk_embeddings. Whether gen may be dropped (not the active
// one) is the registry's to decide, in the same transaction.
func DropGeneration(ctx context.Context, db DB, gen int) (int64, error) {
	if gen <= firstGeneration {
		return 0, fmt.Errorf("%w: generation %d's vectors are chunk_embeddings, which the pipeline writes", ErrFirstGeneration, gen)
	}
	tag, err := db.Exec(ctx, `DELETE FROM generation_embeddings WHERE generation = $1`, gen)
	if err != nil {
		return 0, fmt.Errorf("vectorstore: drop generation %d: %w", gen, err)
	}
	return tag.RowsAffected(), nil
}

// GenerationKeysSQL is a relation of generation gen's stored vectors,
// (doc_id, chunk_index, version, content_hash), for statements elsewhere
// that compare them with the manifest (what a generation still owes)
// without knowing where a generation's vectors live.
func GenerationKeysSQL(gen int) string {
	t := targetOf(gen)
	return `(SELECT c.doc_id, c.chunk_index, c.version, c.content_hash FROM ` + t.table + ` c WHERE ` + t.where("c") + `true)`
}

// GenerationVectors counts the rows of every generation's vectors, by
// generation, stale versions included: chunk_embeddings for generation 1
// and GenerationTable for the others.
func GenerationVectors(ctx context.Context, db DB) (map[int]int64, error) {
	rows, err := db.Query(ctx, `
		SELECT 1, count(*) FROM chunk_embeddings
		UNION ALL
		SELECT generation, count(*) FROM generation_embeddings GROUP BY generation`)
	if err != nil {
		return nil, fmt.Errorf("vectorstore: count vectors by generation: %w", err)
	}
	defer rows.Close()
	out := map[int]int64{}
	for rows.Next() {
		var g int
		var n int64
		if err := rows.Scan(&g, &n); err != nil {
			return nil, fmt.Errorf("vectorstore: count vectors by generation: %w", err)
		}
		out[g] = n
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("vectorstore: count vectors by generation: %w", err)
	}
	return out, nil
}

// The search statements of a later generation take the parameters of the
// first's (see searchVectorSQL) and serve by the same rule (servedSQL),
// from the generation's rows alone: a later generation retains nothing
// aside.

// generationSearchVector ranks by pgvector's cosine distance on the
// column cast to the generation's dimension, the expression a partial
// HNSW index of the generation would be built on.
func generationSearchVector(gen, dims int) string {
	expr := fmt.Sprintf("c.embedding::vector(%d) <=> $1::float4[]::vector(%d)", dims, dims)
	return fmt.Sprintf(`
SELECT c.doc_id, c.chunk_index, c.version, c.text, c.metadata, 1 - (%[1]s) AS score
FROM generation_embeddings c
JOIN documents d ON d.doc_id = c.doc_id
WHERE c.generation = %[2]d AND `+servedSQL+`
ORDER BY %[1]s, c.doc_id, c.chunk_index
LIMIT $3`, expr, gen)
}

// generationSearchRealArray is searchRealArraySQL on one generation's
// rows.
func generationSearchRealArray(gen int) string {
	return fmt.Sprintf(`
WITH q AS (`+realArrayQuery+`)
SELECT c.doc_id, c.chunk_index, c.version, c.text, c.metadata, s.score
FROM generation_embeddings c
JOIN documents d ON d.doc_id = c.doc_id
CROSS JOIN q
CROSS JOIN LATERAL (`+realArrayScore+`) s
WHERE c.generation = %d AND `+servedSQL+`
ORDER BY s.score DESC NULLS LAST, c.doc_id, c.chunk_index
LIMIT $3`, gen)
}

// PruneLaterGenerations deletes what an older version of a document
// left in every generation after the first: its rows at index >=
// chunkCount in a generation cut like the first, and every row older
// than the document's current version in a recut one, whose chunks are
// other pieces of the document. Call it where PruneVersion is called,
// once the new version is complete.
func PruneLaterGenerations(ctx context.Context, db DB, docID string, chunkCount int) (int64, error) {
	tag, err := db.Exec(ctx, `
		DELETE FROM generation_embeddings e USING index_generations g, documents d
		WHERE e.doc_id = $1 AND g.generation = e.generation AND d.doc_id = e.doc_id
		  AND CASE WHEN g.recut THEN e.version < d.version ELSE e.chunk_index >= $2 END`, docID, chunkCount)
	if err != nil {
		return 0, fmt.Errorf("vectorstore: prune %s in later generations: %w", docID, err)
	}
	return tag.RowsAffected(), nil
}

// HeldKey names a chunk at one version and content.
type HeldKey struct {
	DocID       string
	ChunkIndex  int
	Version     int64
	ContentHash string
}

// Held is the text and metadata generation 1 holds of a chunk.
type Held struct {
	Text     string
	Metadata []byte
}

// HeldTexts returns the text and metadata generation 1 (chunk_embeddings)
// holds of each key at exactly its version and content: what a later
// generation embeds without reading the source again. Keys it holds no
// such row of are absent: the chunk changed or went since it was owed.
func HeldTexts(ctx context.Context, db DB, keys []HeldKey) (map[HeldKey]Held, error) {
	if len(keys) == 0 {
		return nil, nil
	}
	docs, indexes, versions, hashes := make([]string, len(keys)), make([]int32, len(keys)), make([]int64, len(keys)), make([]string, len(keys))
	for i, k := range keys {
		docs[i], indexes[i], versions[i], hashes[i] = k.DocID, int32(k.ChunkIndex), k.Version, k.ContentHash
	}
	rows, err := db.Query(ctx, `
		SELECT c.doc_id, c.chunk_index, c.version, c.content_hash, c.text, c.metadata
		FROM unnest($1::text[], $2::int4[], $3::int8[], $4::text[]) AS u(doc_id, chunk_index, version, content_hash)
		JOIN chunk_embeddings c ON c.doc_id = u.doc_id AND c.chunk_index = u.chunk_index
		                       AND c.version = u.version AND c.content_hash = u.content_hash`, docs, indexes, versions, hashes)
	if err != nil {
		return nil, fmt.Errorf("vectorstore: read %d held texts: %w", len(keys), err)
	}
	out := make(map[HeldKey]Held, len(keys))
	var k HeldKey
	var h Held
	if _, err := pgx.ForEachRow(rows, []any{&k.DocID, &k.ChunkIndex, &k.Version, &k.ContentHash, &h.Text, &h.Metadata}, func() error {
		out[k] = Held{Text: h.Text, Metadata: append([]byte(nil), h.Metadata...)}
		return nil
	}); err != nil {
		return nil, fmt.Errorf("vectorstore: read %d held texts: %w", len(keys), err)
	}
	return out, nil
}
