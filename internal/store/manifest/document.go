package manifest

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// Documents names new document versions column by column, as
// RecordDocuments passes them to unnest. Statuses are DocStatus values;
// Metadata is JSON text.
type Documents struct {
	DocIDs, NativeIDs, Hashes, Statuses, Codecs, Metadata []string
	Versions                                              []int64
	ChunkCounts                                           []int32
}

// DocumentState is what a document's row says of its current version.
type DocumentState struct {
	Version int64
	Hash    string
	// RunID is the run that last read the document: the one that recorded
	// its current version, or a later one that found it unchanged (see
	// MarkRead).
	RunID string
}

// ReadDocuments returns the state of each document of ids already
// recorded, by doc id.
func ReadDocuments(ctx context.Context, q Querier, ids []string) (map[string]DocumentState, error) {
	rows, err := q.Query(ctx, `SELECT doc_id, version, content_hash, coalesce(run_id, '') FROM documents WHERE doc_id = ANY($1)`, ids)
	if err != nil {
		return nil, fmt.Errorf("read documents: %w", err)
	}
	states := make(map[string]DocumentState, len(ids))
	var id string
	var st DocumentState
	if _, err := pgx.ForEachRow(rows, []any{&id, &st.Version, &st.Hash, &st.RunID}, func() error {
		states[id] = st
		return nil
	}); err != nil {
		return nil, fmt.Errorf("read documents: %w", err)
	}
	return states, nil
}

// MarkRead records that run runID read the documents ids and found them
// unchanged. With RecordDocuments, every document a run reads then
// carries its run id, which is how a run knows, at no memory cost per
// document, that it has read a native id before.
func MarkRead(ctx context.Context, q Querier, runID string, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	_, err := q.Exec(ctx, `
		WITH locked AS (
			SELECT doc_id FROM documents WHERE doc_id = ANY($2) AND run_id IS DISTINCT FROM $1
			ORDER BY doc_id
			FOR UPDATE)
		UPDATE documents d SET run_id = $1 FROM locked WHERE d.doc_id = locked.doc_id`, runID, ids)
	if err != nil {
		return fmt.Errorf("mark documents read: %w", err)
	}
	return nil
}

// RecordDocuments records each document's new version for source and run
// runID. A document already at that version or a later one is left
// alone, so recording a batch twice changes nothing; a deleted document
// recorded again at a version past its tombstone is ingested anew.
func RecordDocuments(ctx context.Context, q Querier, source, runID string, d Documents) error {
	_, err := q.Exec(ctx, `
		INSERT INTO documents (doc_id, source_id, source_native_id, run_id, version, content_hash, chunk_count, status, codec, metadata)
		SELECT t.doc_id, $1, t.native, $2, t.version, t.hash, t.chunks, t.status, NULLIF(t.codec, ''), t.meta::jsonb
		FROM unnest($3::text[], $4::text[], $5::int8[], $6::text[], $7::int4[], $8::text[], $9::text[], $10::text[])
		     AS t(doc_id, native, version, hash, chunks, status, codec, meta)
		ORDER BY t.doc_id
		ON CONFLICT (doc_id) DO UPDATE SET run_id = EXCLUDED.run_id, version = EXCLUDED.version,
		    content_hash = EXCLUDED.content_hash, chunk_count = EXCLUDED.chunk_count, status = EXCLUDED.status,
		    codec = EXCLUDED.codec, metadata = EXCLUDED.metadata, deleted_at = NULL, updated_at = now()
		WHERE documents.version < EXCLUDED.version`,
		source, runID, d.DocIDs, d.NativeIDs, d.Versions, d.Hashes, d.ChunkCounts, d.Statuses, d.Codecs, d.Metadata)
	return err
}

// LockDocuments locks the documents docs for the rest of the transaction,
// in key order, and reports whether any is being re-indexed: at a version
// that is not yet the one served.
func LockDocuments(ctx context.Context, q Querier, docs []string) (reindexing bool, err error) {
	rows, err := q.Query(ctx, `
		SELECT coalesce(bool_or(l.live_version < l.version), false) FROM (
			SELECT live_version, version FROM documents WHERE doc_id = ANY($1) ORDER BY doc_id FOR UPDATE) l`, docs)
	if err != nil {
		return false, err
	}
	return pgx.CollectExactlyOneRow(rows, pgx.RowTo[bool])
}

// ShareDocuments share-locks docs' rows in key order until the caller's
// transaction ends: a transaction that writes what a document holds
// without changing the document (a later generation's vectors) waits for
// one that changes or deletes it, and the other way round.
func ShareDocuments(ctx context.Context, q Querier, docs []string) error {
	_, err := q.Exec(ctx, `SELECT 1 FROM documents WHERE doc_id = ANY($1) ORDER BY doc_id FOR SHARE`, docs)
	return err
}

// FailDocuments marks each document docIDs[i] DocFailed at versions[i],
// unless it is already, locking the documents in key order as every
// other transaction that locks several does.
func FailDocuments(ctx context.Context, q Querier, docIDs []string, versions []int64) error {
	_, err := q.Exec(ctx, `
		WITH t AS (SELECT * FROM unnest($1::text[], $2::int8[]) AS t(doc_id, version)),
		locked AS (
			SELECT d.doc_id FROM documents d JOIN t USING (doc_id)
			WHERE d.version = t.version AND d.status <> 'failed'
			ORDER BY d.doc_id
			FOR UPDATE OF d)
		UPDATE documents d SET status = 'failed', updated_at = now()
		FROM (SELECT DISTINCT doc_id FROM locked) l WHERE d.doc_id = l.doc_id`, docIDs, versions)
	return err
}

// Completed is a document CompleteDocuments made DocReady.
type Completed struct {
	DocID      string
	ChunkCount int
	// Later is true for a version after the first, whose older chunks
	// beyond ChunkCount may linger and must be pruned.
	Later bool
	// EnqueuedAt is when JetStream took the version's first chunk (the
	// earliest published_at of its chunks); zero when none is recorded.
	EnqueuedAt time.Time
}

// CompleteDocuments settles each document of docs from the statuses of
// its current version's chunks: DocReady, and served from then on, once
// every chunk is Stored; DocFailed while any is Parked, when search keeps
// serving the version it replaces; DocProcessing otherwise. It returns
// the documents it made ready, not those that already were. The caller
// must hold the documents' row locks, or two workers may each see the
// other's chunks unstored.
func CompleteDocuments(ctx context.Context, q Querier, docs []string) ([]Completed, error) {
	rows, err := q.Query(ctx, `
		WITH c AS (
			SELECT m.doc_id, d.status AS was,
			       count(*) FILTER (WHERE m.status = 'stored') AS stored,
			       count(*) FILTER (WHERE m.status = 'parked') AS parked,
			       min(m.published_at) AS enqueued
			FROM ingest_manifest m JOIN documents d USING (doc_id)
			WHERE m.doc_id = ANY($1) AND d.doc_id = ANY($1)
			  AND m.version = d.version AND m.chunk_index < d.chunk_count
			GROUP BY m.doc_id, d.status)
		UPDATE documents d
		SET status = CASE WHEN c.stored = d.chunk_count THEN 'ready'
		                  WHEN c.parked > 0 THEN 'failed'
		                  ELSE 'processing' END,
		    live_version = CASE WHEN c.stored = d.chunk_count THEN d.version ELSE d.live_version END,
		    updated_at = now()
		FROM c WHERE d.doc_id = c.doc_id
		RETURNING d.doc_id, d.chunk_count, d.version > 1, c.enqueued, d.status = 'ready' AND c.was <> 'ready'`, docs)
	if err != nil {
		return nil, fmt.Errorf("complete documents: %w", err)
	}
	var done []Completed
	for rows.Next() {
		var c Completed
		var enqueued pgtype.Timestamptz
		var madeReady bool
		if err := rows.Scan(&c.DocID, &c.ChunkCount, &c.Later, &enqueued, &madeReady); err != nil {
			rows.Close()
			return nil, fmt.Errorf("complete documents: %w", err)
		}
		c.EnqueuedAt = enqueued.Time
		if madeReady {
			done = append(done, c)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("complete documents: %w", err)
	}
	return done, nil
}

// ClearLiveVersions records that the documents ids have no version left
// to serve while a newer one is indexed: their vectors are gone.
func ClearLiveVersions(ctx context.Context, q Querier, ids []string) error {
	if _, err := q.Exec(ctx, `UPDATE documents SET live_version = NULL WHERE doc_id = ANY($1)`, ids); err != nil {
		return fmt.Errorf("clear live versions: %w", err)
	}
	return nil
}

// ForgetHashes forgets the content hash of the documents ids, so that
// the producer's next run over their source, which compares hashes,
// sends them again as a new version. It returns how many it changed.
func ForgetHashes(ctx context.Context, q Querier, ids []string) (int64, error) {
	tag, err := q.Exec(ctx, `UPDATE documents SET content_hash = '', updated_at = now() WHERE doc_id = ANY($1) AND content_hash <> ''`, ids)
	if err != nil {
		return 0, fmt.Errorf("forget content hashes: %w", err)
	}
	return tag.RowsAffected(), nil
}
