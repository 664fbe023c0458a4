package vectorstore

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/sluicehq/sluice/pkg/classify"
)

// upsertStatement builds the batch upsert for a dimension. cast turns the
// real[] slice into the column type ("::vector" under pgvector).
//
// input numbers the records; written inserts them in key order, so that two
// batches sharing chunks lock them in the same order and cannot deadlock;
// the final SELECT reports, in input order, whether each record was written
// (and how) and, for the others, the row as it stood when the statement
// began. A data-modifying CTE's effects are invisible to the rest of its
// statement, which is what makes that "before" read possible in one round
// trip.
func upsertStatement(t target, dims int, cast string) string {
	return fmt.Sprintf(`
WITH input AS (
	SELECT u.*
	FROM unnest($1::text[], $2::int4[], $3::int8[], $4::text[], $5::text[], $6::text[], $7::jsonb[])
	     WITH ORDINALITY AS u(doc_id, chunk_index, version, content_hash, model, text, metadata, ord)
), written AS (
	INSERT INTO `+t.table+` AS ce
	       (`+t.column+`doc_id, chunk_index, version, content_hash, model, dims, embedding, text, metadata)
	SELECT `+t.value+`doc_id, chunk_index, version, content_hash, model, %[1]d,
	       (($8::float4[])[(ord - 1) * %[1]d + 1 : ord * %[1]d])%[2]s, text, metadata
	FROM input
	WHERE NOT EXISTS (SELECT 1 FROM documents d WHERE d.doc_id = input.doc_id AND `+newerVersionSQL+`)
	ORDER BY doc_id, chunk_index
	ON CONFLICT (`+t.column+`doc_id, chunk_index) DO UPDATE SET
	       version = EXCLUDED.version,
	       content_hash = EXCLUDED.content_hash,
	       model = EXCLUDED.model,
	       dims = EXCLUDED.dims,
	       embedding = EXCLUDED.embedding,
	       text = EXCLUDED.text,
	       metadata = EXCLUDED.metadata,
	       updated_at = now()
	WHERE ce.version < EXCLUDED.version
	   OR (ce.version = EXCLUDED.version AND ce.content_hash <> EXCLUDED.content_hash)
	RETURNING ce.doc_id, ce.chunk_index, (ce.xmax = 0) AS inserted
)
SELECT i.ord, w.inserted, prev.version, prev.content_hash = i.content_hash,
       EXISTS (SELECT 1 FROM documents d WHERE d.doc_id = i.doc_id AND `+strings.ReplaceAll(newerVersionSQL, "input.", "i.")+`)
FROM input i
LEFT JOIN written w ON w.doc_id = i.doc_id AND w.chunk_index = i.chunk_index
LEFT JOIN `+t.table+` prev ON `+t.where("prev")+`prev.doc_id = i.doc_id AND prev.chunk_index = i.chunk_index
ORDER BY i.ord`, dims, cast)
}

// newerVersionSQL is the version guard's view of the documents table,
// for a record named input or i: the document's row is at a newer
// version than the record, or the record's own version is a tombstone.
// A deleted document's vectors are gone, so only this guard, not the
// chunk's own row, can tell that a record of it is stale: a record of
// any version up to the tombstone's is refused, and nothing of a
// deleted document is ever written back.
const newerVersionSQL = `(d.version > input.version OR (d.version = input.version AND d.status = ` + sqlDocDeleted + `))`

// resolveStatement reads the committed rows of chunks whose outcome the
// upsert statement could not tell: rows another transaction committed
// while the statement waited on them, which its snapshot does not show.
func resolveStatement(t target) string {
	return `
SELECT u.ord, ce.version, ce.content_hash
FROM unnest($1::text[], $2::int4[]) WITH ORDINALITY AS u(doc_id, chunk_index, ord)
LEFT JOIN ` + t.table + ` ce ON ` + t.where("ce") + `ce.doc_id = u.doc_id AND ce.chunk_index = u.chunk_index`
}

// Upsert writes recs in one statement and reports each record's outcome, in
// input order. It returns a *RecordError for the first record Validate
// rejects and a *DuplicateError for a repeated chunk, both before touching
// the database; a database error wrapped with %w; and, when a concurrent
// transaction rewrote or removed a chunk mid-statement, a retryable classify
// error matching ErrConcurrentWrite. On any error nothing is committed by
// Upsert itself, but a caller's transaction that saw a database error is
// aborted and must be rolled back.
func (p *Postgres) Upsert(ctx context.Context, db DB, recs []Record) ([]Outcome, error) {
	if len(recs) == 0 {
		return nil, nil
	}
	b := getBatch()
	defer b.release()
	for i := range recs {
		if err := Validate(recs[i], p.dims); err != nil {
			return nil, &RecordError{Index: i, Err: err}
		}
		key := chunkKey{recs[i].DocID, recs[i].ChunkIndex}
		if first, dup := b.seen[key]; dup {
			return nil, &DuplicateError{DocID: key.docID, ChunkIndex: key.index, First: first, Second: i}
		}
		b.seen[key] = i
	}
	b.fill(recs, p.dims)

	out := make([]Outcome, len(recs))
	if err := p.write(ctx, db, b, out); err != nil {
		return nil, err
	}
	if len(b.unresolved) > 0 {
		if err := p.resolve(ctx, db, b, out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// write runs the upsert statement, fills out for every record it can judge
// and lists the others in b.unresolved.
func (p *Postgres) write(ctx context.Context, db DB, b *batch, out []Outcome) error {
	rows, err := db.Query(ctx, p.upsertSQL,
		b.docIDs, b.chunkIndex, b.versions, b.hashes, b.models, b.texts, b.metadata, float4Array(b.flat))
	if err != nil {
		return fmt.Errorf("vectorstore: upsert %d records: %w", len(out), err)
	}
	var (
		ord         int64
		inserted    pgtype.Bool
		prevVersion pgtype.Int8
		sameHash    pgtype.Bool
		guarded     bool
	)
	b.unresolved = b.unresolved[:0]
	tag, err := pgx.ForEachRow(rows, []any{&ord, &inserted, &prevVersion, &sameHash, &guarded}, func() error {
		i := int(ord - 1)
		if i < 0 || i >= len(out) {
			return fmt.Errorf("upsert returned ordinal %d for a batch of %d", ord, len(out))
		}
		switch {
		case inserted.Valid && inserted.Bool:
			out[i] = Inserted
		case inserted.Valid:
			out[i] = Updated
		case guarded:
			out[i] = Stale
		case prevVersion.Valid && prevVersion.Int64 > b.versions[i]:
			out[i] = Stale
		case prevVersion.Valid && prevVersion.Int64 == b.versions[i] && sameHash.Bool:
			out[i] = Unchanged
		default:
			b.unresolved = append(b.unresolved, i)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("vectorstore: upsert %d records: %w", len(out), err)
	}
	if n := tag.RowsAffected(); n != int64(len(out)) {
		return fmt.Errorf("vectorstore: upsert %d records: the statement reported %d", len(out), n)
	}
	return nil
}

// resolve judges the records write could not, from the rows as committed
// now: the concurrent writer either stored a newer version (Stale) or this
// very version and content (Unchanged). Anything else means the chunk moved
// again under us, and only a retry can tell what to do.
func (p *Postgres) resolve(ctx context.Context, db DB, b *batch, out []Outcome) error {
	b.resolveIDs = b.resolveIDs[:0]
	b.resolveIdxs = b.resolveIdxs[:0]
	for _, i := range b.unresolved {
		b.resolveIDs = append(b.resolveIDs, b.docIDs[i])
		b.resolveIdxs = append(b.resolveIdxs, b.chunkIndex[i])
	}
	rows, err := db.Query(ctx, p.resolveSQL, b.resolveIDs, b.resolveIdxs)
	if err != nil {
		return fmt.Errorf("vectorstore: upsert: read concurrently written chunks: %w", err)
	}
	var (
		ord     int64
		version pgtype.Int8
		hash    pgtype.Text
	)
	_, err = pgx.ForEachRow(rows, []any{&ord, &version, &hash}, func() error {
		j := int(ord - 1)
		if j < 0 || j >= len(b.unresolved) {
			return fmt.Errorf("returned ordinal %d for %d chunks", ord, len(b.unresolved))
		}
		i := b.unresolved[j]
		switch {
		case version.Valid && version.Int64 > b.versions[i]:
			out[i] = Stale
		case version.Valid && version.Int64 == b.versions[i] && hash.String == b.hashes[i]:
			out[i] = Unchanged
		default:
			return classify.Retryable(classify.ClassDatabaseTransient,
				fmt.Errorf("vectorstore: upsert: %w: chunk %s/%d at version %d", ErrConcurrentWrite, b.docIDs[i], b.chunkIndex[i], b.versions[i]))
		}
		return nil
	})
	if errors.Is(err, ErrConcurrentWrite) {
		return err
	}
	if err != nil {
		return fmt.Errorf("vectorstore: upsert: read concurrently written chunks: %w", err)
	}
	for _, i := range b.unresolved {
		if out[i] == 0 {
			return fmt.Errorf("vectorstore: upsert: no row for concurrently written chunk %s/%d", b.docIDs[i], b.chunkIndex[i])
		}
	}
	return nil
}
