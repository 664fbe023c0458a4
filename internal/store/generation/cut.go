package generation

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/sluicehq/sluice/internal/store/manifest"
	"github.com/sluicehq/sluice/pkg/vectorstore"
)

// A recut generation's chunks are cut by the producer from the sources,
// with the generation's chunking, and recorded with their text in
// generation_chunks, per document version in generation_documents
// (migration 33): its backfill embeds that text instead of generation
// 1's. This file holds those tables' statements.

// Cut is one document version as a recut generation's chunking cut it.
type Cut struct {
	DocID    string
	SourceID string
	Version  int64
	// Chunks are the cut's chunks, by index from 0; none for a document
	// with nothing to embed (empty, unreadable).
	Chunks []CutChunk
}

// CutChunk is one chunk of a Cut.
type CutChunk struct {
	Index int
	// ContentHash is messages.ContentHash of Text and Metadata.
	ContentHash string
	Text        string
	// Metadata is the document's canonical JSON metadata, or nil.
	Metadata []byte
	// Withheld is a chunk that touches a secret: its text is never
	// written, and it is parked in every generation alike, as generation
	// 1 escalates it.
	Withheld bool
}

// Recuts returns the recut generations that are not dropped: those the
// producer cuts the documents it reads for.
func Recuts(ctx context.Context, q manifest.Querier) ([]Generation, error) {
	rows, err := q.Query(ctx, selectSQL+` WHERE recut AND status <> '`+string(Dropped)+`' ORDER BY generation`)
	if err != nil {
		return nil, fmt.Errorf("list recut index generations: %w", err)
	}
	gs, err := pgx.CollectRows(rows, scan)
	if err != nil {
		return nil, fmt.Errorf("list recut index generations: %w", err)
	}
	return gs, nil
}

// CutVersions returns the version generation gen has cut of each of
// docIDs it has cut.
func CutVersions(ctx context.Context, q manifest.Querier, gen int, docIDs []string) (map[string]int64, error) {
	rows, err := q.Query(ctx, `SELECT doc_id, version FROM generation_documents WHERE generation = $1 AND doc_id = ANY($2)`, gen, docIDs)
	if err != nil {
		return nil, fmt.Errorf("read generation %d's cuts: %w", gen, err)
	}
	out := make(map[string]int64, len(docIDs))
	var id string
	var v int64
	if _, err := pgx.ForEachRow(rows, []any{&id, &v}, func() error { out[id] = v; return nil }); err != nil {
		return nil, fmt.Errorf("read generation %d's cuts: %w", gen, err)
	}
	return out, nil
}

// RecordCuts writes generation gen's cuts in the caller's transaction,
// which holds the documents' row locks (the producer's record): each
// document's cut replaces an older one, never a newer, and the chunks
// it does not withhold are queued for the generation's backfill, so that
// they reach it as a chunk generation 1 stores reaches the others. Each
// document appears once in cuts.
func RecordCuts(ctx context.Context, q manifest.Querier, gen int, cuts []Cut) error {
	if len(cuts) == 0 {
		return nil
	}
	docs, versions, counts := make([]string, len(cuts)), make([]int64, len(cuts)), make([]int32, len(cuts))
	var c cutColumns
	for i, cut := range cuts {
		docs[i], versions[i], counts[i] = cut.DocID, cut.Version, int32(len(cut.Chunks))
		for _, ch := range cut.Chunks {
			c.add(cut, ch)
		}
	}
	_, err := q.Exec(ctx, `
		WITH cut AS (
			INSERT INTO generation_documents AS g (generation, doc_id, version, chunk_count)
			SELECT $1, * FROM unnest($2::text[], $3::int8[], $4::int4[])
			ON CONFLICT (generation, doc_id) DO UPDATE SET version = EXCLUDED.version, chunk_count = EXCLUDED.chunk_count, cut_at = now()
			WHERE g.version <= EXCLUDED.version
			RETURNING doc_id, chunk_count)
		DELETE FROM generation_chunks c USING cut
		WHERE c.generation = $1 AND c.doc_id = cut.doc_id AND c.chunk_index >= cut.chunk_count`, gen, docs, versions, counts)
	if err != nil {
		return fmt.Errorf("record generation %d's cuts: %w", gen, err)
	}
	if len(c.docs) == 0 {
		return nil
	}
	_, err = q.Exec(ctx, `
		WITH cut AS (
			INSERT INTO generation_chunks AS c (generation, doc_id, chunk_index, version, content_hash, source_id, withheld, text, metadata)
			SELECT $1, u.doc_id, u.chunk_index, u.version, u.content_hash, u.source_id, u.withheld, u.text, u.metadata::jsonb
			FROM unnest($2::text[], $3::int4[], $4::int8[], $5::text[], $6::text[], $7::bool[], $8::text[], $9::text[])
			     AS u(doc_id, chunk_index, version, content_hash, source_id, withheld, text, metadata)
			JOIN generation_documents g ON g.generation = $1 AND g.doc_id = u.doc_id AND g.version = u.version
			ON CONFLICT (generation, doc_id, chunk_index) DO UPDATE SET version = EXCLUDED.version,
				content_hash = EXCLUDED.content_hash, source_id = EXCLUDED.source_id, withheld = EXCLUDED.withheld,
				text = EXCLUDED.text, metadata = EXCLUDED.metadata, cut_at = now()
			WHERE c.version <= EXCLUDED.version
			RETURNING doc_id, chunk_index, version, content_hash, source_id, withheld)
		INSERT INTO generation_backfill_queue (generation, doc_id, chunk_index, version, content_hash, source_id)
		SELECT $1, doc_id, chunk_index, version, content_hash, source_id FROM cut WHERE NOT withheld`,
		gen, c.docs, c.indexes, c.versions, c.hashes, c.sources, c.withheld, c.texts, c.metadata)
	if err != nil {
		return fmt.Errorf("record generation %d's cut chunks: %w", gen, err)
	}
	return nil
}

// cutColumns are the cut chunks of RecordCuts as the columns unnest
// takes.
type cutColumns struct {
	docs, hashes, sources, texts, metadata []string
	indexes                                []int32
	versions                               []int64
	withheld                               []bool
}

func (c *cutColumns) add(cut Cut, ch CutChunk) {
	meta := "{}"
	if len(ch.Metadata) > 0 {
		meta = string(ch.Metadata)
	}
	text := ch.Text
	if ch.Withheld {
		text, meta = "", "{}"
	}
	c.docs, c.indexes, c.versions = append(c.docs, cut.DocID), append(c.indexes, int32(ch.Index)), append(c.versions, cut.Version)
	c.hashes, c.sources, c.withheld = append(c.hashes, ch.ContentHash), append(c.sources, cut.SourceID), append(c.withheld, ch.Withheld)
	c.texts, c.metadata = append(c.texts, text), append(c.metadata, meta)
}

// CutTexts returns the text and metadata a recut generation gen holds of
// each key at exactly its version and content, as vectorstore.HeldTexts
// does for generation 1's. Keys it holds no such row of, or withholds,
// are absent.
func CutTexts(ctx context.Context, q manifest.Querier, gen int, keys []vectorstore.HeldKey) (map[vectorstore.HeldKey]vectorstore.Held, error) {
	if len(keys) == 0 {
		return nil, nil
	}
	docs, indexes, versions, hashes := make([]string, len(keys)), make([]int32, len(keys)), make([]int64, len(keys)), make([]string, len(keys))
	for i, k := range keys {
		docs[i], indexes[i], versions[i], hashes[i] = k.DocID, int32(k.ChunkIndex), k.Version, k.ContentHash
	}
	rows, err := q.Query(ctx, `
		SELECT c.doc_id, c.chunk_index, c.version, c.content_hash, c.text, c.metadata
		FROM unnest($2::text[], $3::int4[], $4::int8[], $5::text[]) AS u(doc_id, chunk_index, version, content_hash)
		JOIN generation_chunks c ON c.generation = $1 AND c.doc_id = u.doc_id AND c.chunk_index = u.chunk_index
		                        AND c.version = u.version AND c.content_hash = u.content_hash AND NOT c.withheld`,
		gen, docs, indexes, versions, hashes)
	if err != nil {
		return nil, fmt.Errorf("read generation %d's cut texts: %w", gen, err)
	}
	out := make(map[vectorstore.HeldKey]vectorstore.Held, len(keys))
	var k vectorstore.HeldKey
	var h vectorstore.Held
	if _, err := pgx.ForEachRow(rows, []any{&k.DocID, &k.ChunkIndex, &k.Version, &k.ContentHash, &h.Text, &h.Metadata}, func() error {
		out[k] = vectorstore.Held{Text: h.Text, Metadata: append([]byte(nil), h.Metadata...)}
		return nil
	}); err != nil {
		return nil, fmt.Errorf("read generation %d's cut texts: %w", gen, err)
	}
	return out, nil
}

// shouldHold is the relation of the chunks generation gen (an SQL
// expression) should hold, whatever its chunking: for one cut like
// generation 1, the manifest's chunks of every document's current
// version; for a recut one, its own cut of them. Its columns are
// doc_id, chunk_index, version, content_hash, source_id, status (the
// manifest's; a withheld cut chunk is parked, any other stored), since
// (when the row was last written) and, withText, cut_text (a cut
// chunk's text; NULL for the manifest's, whose text is generation 1's).
func shouldHold(gen string, withText bool) string {
	manifestText, cutText := "", ""
	if withText {
		manifestText, cutText = ", NULL::text AS cut_text", ", gc.text"
	}
	return `(
SELECT m.doc_id, m.chunk_index, m.version, m.content_hash, d.source_id, m.status, m.updated_at AS since` + manifestText + `
FROM ingest_manifest m
JOIN documents d ON d.doc_id = m.doc_id AND d.version = m.version AND d.status <> ` + manifest.SQLDocDeleted + `
WHERE m.status <> ` + manifest.SQLSuperseded + `
  AND NOT EXISTS (SELECT 1 FROM index_generations r WHERE r.generation = ` + gen + ` AND r.recut)
UNION ALL
SELECT gc.doc_id, gc.chunk_index, gc.version, gc.content_hash, gc.source_id,
       CASE WHEN gc.withheld THEN ` + manifest.SQLParked + ` ELSE ` + manifest.SQLStored + ` END, gc.cut_at` + cutText + `
FROM generation_chunks gc
JOIN documents d ON d.doc_id = gc.doc_id AND d.version = gc.version AND d.status <> ` + manifest.SQLDocDeleted + `
WHERE gc.generation = ` + gen + `)`
}

// uncutSQL counts the documents, not deleted, that recut generation $1
// has not cut at their current version: their sources have not been run
// since the generation was created or the document changed.
const uncutSQL = `
SELECT count(*) FROM documents d
WHERE d.status <> ` + manifest.SQLDocDeleted + `
  AND NOT EXISTS (SELECT 1 FROM generation_documents g WHERE g.generation = $1 AND g.doc_id = d.doc_id AND g.version = d.version)`

// countUncut counts generation g's uncut documents; 0 unless it is
// recut.
func countUncut(ctx context.Context, q manifest.Querier, g Generation) (int64, error) {
	if !g.Recut {
		return 0, nil
	}
	rows, err := q.Query(ctx, uncutSQL, g.ID)
	if err != nil {
		return 0, fmt.Errorf("count the documents generation %d has not cut: %w", g.ID, err)
	}
	n, err := pgx.CollectExactlyOneRow(rows, pgx.RowTo[int64])
	if err != nil {
		return 0, fmt.Errorf("count the documents generation %d has not cut: %w", g.ID, err)
	}
	return n, nil
}
