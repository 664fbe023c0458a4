package manifest

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// Tombstone is a document's deleting version, as Tombstones records it.
type Tombstone struct {
	DocID    string
	SourceID string
	NativeID string
	// Version is the tombstone's version: the deleted version plus one.
	Version int64
}

// Tombstones records a tombstone for each document of ids not deleted
// already: a new version, DocDeleted, with no chunks, no content hash, no
// metadata and nothing served, read by run runID (empty for none). It
// locks the documents in key order, as every statement that locks
// several does, and returns the tombstones it recorded. A document
// already deleted is left as it is, so deleting twice changes nothing.
func Tombstones(ctx context.Context, q Querier, runID string, ids []string) ([]Tombstone, error) {
	rows, err := q.Query(ctx, `
		WITH locked AS (
			SELECT doc_id FROM documents WHERE doc_id = ANY($1) ORDER BY doc_id FOR UPDATE)
		UPDATE documents d SET version = d.version + 1, status = `+SQLDocDeleted+`, content_hash = '',
		       chunk_count = 0, live_version = NULL, metadata = '{}', codec = NULL,
		       run_id = coalesce(NULLIF($2, ''), d.run_id), deleted_at = now(), updated_at = now()
		FROM locked WHERE d.doc_id = locked.doc_id AND d.status <> `+SQLDocDeleted+`
		RETURNING d.doc_id, d.source_id, d.source_native_id, d.version`, ids, runID)
	if err != nil {
		return nil, fmt.Errorf("record tombstones: %w", err)
	}
	ts, err := pgx.CollectRows(rows, pgx.RowToStructByPos[Tombstone])
	if err != nil {
		return nil, fmt.Errorf("record tombstones: %w", err)
	}
	return ts, nil
}

// EraseChunks makes every manifest row of the tombstones' documents
// Superseded at the tombstone's version and clears its job bytes: no
// sweeper, redrive or consumer has anything of them to publish or store,
// and a job of an older version that still arrives is stale. It returns
// how many rows held job bytes.
func EraseChunks(ctx context.Context, q Querier, ts []Tombstone) (map[string]int, error) {
	ids, versions := tombstoneColumns(ts)
	rows, err := q.Query(ctx, `
		WITH t AS (SELECT * FROM unnest($1::text[], $2::int8[]) AS t(doc_id, version)),
		locked AS (
			SELECT m.doc_id, m.chunk_index, m.job IS NOT NULL AS had_job
			FROM ingest_manifest m JOIN t USING (doc_id)
			WHERE m.doc_id = ANY($1)
			ORDER BY m.doc_id, m.chunk_index
			FOR UPDATE OF m)
		UPDATE ingest_manifest m SET status = `+SQLSuperseded+`, version = t.version, job = NULL,
		       content_hash = '', updated_at = now()
		FROM t JOIN locked USING (doc_id)
		WHERE m.doc_id = t.doc_id AND m.chunk_index = locked.chunk_index
		RETURNING m.doc_id, locked.had_job`, ids, versions)
	if err != nil {
		return nil, fmt.Errorf("erase manifest jobs: %w", err)
	}
	jobs := make(map[string]int, len(ts))
	var id string
	var hadJob bool
	if _, err := pgx.ForEachRow(rows, []any{&id, &hadJob}, func() error {
		if hadJob {
			jobs[id]++
		}
		return nil
	}); err != nil {
		return nil, fmt.Errorf("erase manifest jobs: %w", err)
	}
	return jobs, nil
}

// EraseEscalatedText deletes the escalated text of the documents ids and
// returns how many rows went, by document.
func EraseEscalatedText(ctx context.Context, q Querier, ids []string) (map[string]int, error) {
	rows, err := q.Query(ctx, `DELETE FROM escalated_chunks WHERE doc_id = ANY($1) RETURNING doc_id`, ids)
	if err != nil {
		return nil, fmt.Errorf("erase escalated text: %w", err)
	}
	return countByDoc(rows, "erase escalated text")
}

// Deleted locks the documents ids in key order and returns those whose
// current version is a tombstone. A transaction that writes anything of
// a document (its dead letters, its escalated text) calls it first, so
// that a delete either committed before and is seen, or waits for it.
func Deleted(ctx context.Context, q Querier, ids []string) (map[string]bool, error) {
	rows, err := q.Query(ctx, `
		SELECT doc_id, status = `+SQLDocDeleted+` FROM documents WHERE doc_id = ANY($1) ORDER BY doc_id FOR UPDATE`, ids)
	if err != nil {
		return nil, fmt.Errorf("lock documents: %w", err)
	}
	deleted := map[string]bool{}
	var id string
	var gone bool
	if _, err := pgx.ForEachRow(rows, []any{&id, &gone}, func() error {
		if gone {
			deleted[id] = true
		}
		return nil
	}); err != nil {
		return nil, fmt.Errorf("lock documents: %w", err)
	}
	return deleted, nil
}

// CountUnseen counts the documents of source that are not deleted and
// that run runID did not read (what a sync of the source would delete),
// and every document of the source not deleted.
func CountUnseen(ctx context.Context, q Querier, source, runID string) (unseen, live int, err error) {
	rows, err := q.Query(ctx, `
		SELECT count(*) FILTER (WHERE run_id IS DISTINCT FROM $2), count(*)
		FROM documents WHERE source_id = $1 AND status <> `+SQLDocDeleted, source, runID)
	if err != nil {
		return 0, 0, fmt.Errorf("count unseen documents: %w", err)
	}
	if _, err := pgx.ForEachRow(rows, []any{&unseen, &live}, func() error { return nil }); err != nil {
		return 0, 0, fmt.Errorf("count unseen documents: %w", err)
	}
	return unseen, live, nil
}

// Unseen returns, in doc id order, up to limit ids after after of the
// documents of source that are not deleted and that run runID did not
// read: a sync deletes them a batch at a time.
func Unseen(ctx context.Context, q Querier, source, runID, after string, limit int) ([]string, error) {
	rows, err := q.Query(ctx, `
		SELECT doc_id FROM documents
		WHERE source_id = $1 AND status <> `+SQLDocDeleted+` AND run_id IS DISTINCT FROM $2 AND doc_id > $3
		ORDER BY doc_id LIMIT $4`, source, runID, after, limit)
	if err != nil {
		return nil, fmt.Errorf("find unseen documents: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("find unseen documents: %w", err)
	}
	return ids, nil
}

func tombstoneColumns(ts []Tombstone) ([]string, []int64) {
	ids, versions := make([]string, len(ts)), make([]int64, len(ts))
	for i, t := range ts {
		ids[i], versions[i] = t.DocID, t.Version
	}
	return ids, versions
}

// countByDoc counts rows of one doc_id column by document.
func countByDoc(rows pgx.Rows, what string) (map[string]int, error) {
	n := map[string]int{}
	var id string
	if _, err := pgx.ForEachRow(rows, []any{&id}, func() error {
		n[id]++
		return nil
	}); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return n, nil
}
