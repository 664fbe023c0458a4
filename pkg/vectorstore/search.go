package vectorstore

import (
	"context"
	"fmt"
	"math"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// DocReady is the status of a documents row whose version has every
// chunk stored. Search serves a ready document's current version, and
// any other document's live version (the one it served before a newer
// version began). The statuses are internal/store/manifest's; this one lives
// here because the search statements name it.
const DocReady = "ready"

// DocDeleted is the status of a documents row whose current version is a
// tombstone: the document was deleted, and the upsert's version guard
// refuses every record of it up to that version.
const DocDeleted = "deleted"

// sqlDocReady and sqlDocDeleted are DocReady and DocDeleted as SQL
// literals.
const (
	sqlDocReady   = "'" + DocReady + "'"
	sqlDocDeleted = "'" + DocDeleted + "'"
)

// Both search statements take the same parameters: $1 the query as
// float4[], $2 a source_id or ” for all, $3 K. A ready document serves its
// current version; one whose new version is still being indexed (or
// failed) serves the version it replaces, live_version, from the rows the
// new one has not replaced yet and those Retain kept (blue/green). Rows
// of other versions, such as an older, longer version's beyond the new
// chunk_count, linger until PruneVersion but are never served.
const (
	// searchVectorSQL ranks by pgvector's own cosine distance operator. The
	// tie-breakers make the order total; PostgreSQL 17 still serves them
	// from an approximate (HNSW) index with an incremental sort. Each
	// table is ranked and cut to K on its own, so that chunk_embeddings
	// keeps its index scan, and the two are merged. A zero stored vector
	// has distance NaN, which PostgreSQL sorts after every number.
	searchVectorSQL = `
SELECT doc_id, chunk_index, version, text, metadata, 1 - distance AS score FROM (
	(SELECT c.doc_id, c.chunk_index, c.version, c.text, c.metadata,
	        c.embedding <=> $1::float4[]::vector AS distance
	 FROM chunk_embeddings c
	 JOIN documents d ON d.doc_id = c.doc_id
	 WHERE ` + servedSQL + `
	 ORDER BY c.embedding <=> $1::float4[]::vector, c.doc_id, c.chunk_index
	 LIMIT $3)
	UNION ALL
	(SELECT p.doc_id, p.chunk_index, p.version, p.text, p.metadata,
	        p.embedding <=> $1::float4[]::vector AS distance
	 FROM chunk_embeddings_previous p
	 JOIN documents d ON d.doc_id = p.doc_id AND d.live_version = p.version
	 WHERE d.status <> ` + sqlDocReady + ` AND ($2::text = '' OR d.source_id = $2::text)
	 ORDER BY 6, 1, 2
	 LIMIT $3)
) hits
ORDER BY distance, doc_id, chunk_index
LIMIT $3`

	// searchRealArraySQL ranks chunk_embeddings and the retained rows
	// (see realArrayQuery and realArrayScore).
	searchRealArraySQL = `
WITH q AS (` + realArrayQuery + `)
SELECT c.doc_id, c.chunk_index, c.version, c.text, c.metadata, s.score
FROM (SELECT doc_id, chunk_index, version, text, metadata, embedding FROM chunk_embeddings
      UNION ALL
      SELECT doc_id, chunk_index, version, text, metadata, embedding FROM chunk_embeddings_previous) c
JOIN documents d ON d.doc_id = c.doc_id
CROSS JOIN q
CROSS JOIN LATERAL (` + realArrayScore + `) s
WHERE ` + servedSQL + `
ORDER BY s.score DESC NULLS LAST, c.doc_id, c.chunk_index
LIMIT $3`
)

// The parts of the real[] search statements: they compute cosine
// similarity in float8 from the arrays, the query's norm once. A zero
// stored vector scores NULL, sorted last.
const (
	realArrayQuery = `
	SELECT $1::float4[] AS v, sqrt(sum(x::float8 * x::float8)) AS norm
	FROM unnest($1::float4[]) AS x
`
	realArrayScore = `
	SELECT sum(a::float8 * b::float8) / NULLIF(sqrt(sum(a::float8 * a::float8)) * q.norm, 0) AS score
	FROM unnest(c.embedding, q.v) AS u(a, b)
`
	// servedSQL keeps the rows of c (joined to its document d) that
	// search serves: a ready document's current version, another's live
	// version; and those of source $2, or every source for ''.
	servedSQL = `((d.status = ` + sqlDocReady + ` AND c.version = d.version) OR (d.status <> ` + sqlDocReady + ` AND c.version = d.live_version))
  AND ($2::text = '' OR d.source_id = $2::text)`
)

// Search returns the opts.K chunks nearest to query by cosine similarity,
// nearest first and ties broken by doc_id then chunk_index, among the
// current-version chunks of documents whose status is 'ready'. A query of
// the wrong length, holding NaN or ±Inf, or of zero norm is a permanent
// classify error (dimension_mismatch or invalid_vector); a K outside
// 0..MaxSearchK is an error too.
func (p *Postgres) Search(ctx context.Context, db DB, query []float32, opts SearchOptions) ([]Hit, error) {
	if err := validateQuery(query, p.dims); err != nil {
		return nil, fmt.Errorf("vectorstore: search: %w", err)
	}
	k := opts.K
	if k == 0 {
		k = DefaultSearchK
	}
	if k < 0 || k > MaxSearchK {
		return nil, fmt.Errorf("vectorstore: search: K is %d: ask for 1..%d hits, or 0 for %d", opts.K, MaxSearchK, DefaultSearchK)
	}
	rows, err := db.Query(ctx, p.searchSQL, query, opts.SourceID, k)
	if err != nil {
		return nil, fmt.Errorf("vectorstore: search: %w", err)
	}
	hits, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Hit, error) {
		var (
			h          Hit
			chunkIndex int32
			score      pgtype.Float8
		)
		err := row.Scan(&h.DocID, &chunkIndex, &h.Version, &h.Text, &h.Metadata, &score)
		h.ChunkIndex = int(chunkIndex)
		// A zero stored vector has no direction: NULL in real[] mode, NaN
		// under pgvector. Either way it is no nearer than orthogonal.
		if score.Valid && !math.IsNaN(score.Float64) {
			h.Score = score.Float64
		}
		return h, err
	})
	if err != nil {
		return nil, fmt.Errorf("vectorstore: search: %w", err)
	}
	return hits, nil
}
