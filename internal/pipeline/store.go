package pipeline

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/jackc/pgx/v5"

	"github.com/sluicehq/sluice/pkg/classify"
	"github.com/sluicehq/sluice/pkg/vectorstore"
)

// storeAll stores jobs in one transaction. A record the store rejects is
// failed alone and the rest retried; a permanent database error for
// several rows is bisected like an embedder rejection. It returns an error
// only for a failure to reach the database at all.
func (p *Pipeline) storeAll(ctx context.Context, jobs []*Job) error {
	if len(jobs) == 0 {
		return nil
	}
	err := p.storeTx(ctx, jobs)
	if err == nil {
		p.crash("after-commit-before-ack")
		return nil
	}
	var recErr *vectorstore.RecordError
	switch {
	case errors.As(err, &recErr) && recErr.Index >= 0 && recErr.Index < len(jobs):
		p.fail(jobs[recErr.Index], StageStore, recErr.Err)
		rest := make([]*Job, 0, len(jobs)-1)
		rest = append(append(rest, jobs[:recErr.Index]...), jobs[recErr.Index+1:]...)
		return p.storeAll(ctx, rest)
	case classify.IsDataError(err) && len(jobs) > 1:
		p.metrics.Bisections.Inc()
		half := len(jobs) / 2
		if err := p.storeAll(ctx, jobs[:half]); err != nil {
			return err
		}
		return p.storeAll(ctx, jobs[half:])
	}
	for _, j := range jobs {
		p.fail(j, StageStore, err)
	}
	return nil
}

// storeTx is the store transaction: lock the batch's documents, upsert the
// vectors, mark the manifest stored, and complete every document version
// whose chunks are now all stored.
func (p *Pipeline) storeTx(ctx context.Context, jobs []*Job) error {
	now := p.now()
	return pgx.BeginFunc(ctx, p.pool, func(tx pgx.Tx) error {
		docs := distinctDocs(jobs)
		// Locking documents in a fixed order serialises the completion
		// check per document without deadlocks between workers.
		var reindexing bool
		if err := tx.QueryRow(ctx, `
			SELECT coalesce(bool_or(l.live_version < l.version), false) FROM (
				SELECT live_version, version FROM documents WHERE doc_id = ANY($1) ORDER BY doc_id FOR UPDATE) l`,
			docs).Scan(&reindexing); err != nil {
			return fmt.Errorf("lock documents: %w", err)
		}
		if reindexing {
			// The served version's rows are about to be replaced by the new
			// version's: keep them searchable until it is complete.
			ids, indexes := make([]string, len(jobs)), make([]int32, len(jobs))
			for i, j := range jobs {
				ids[i], indexes[i] = j.chunk.DocID, int32(j.chunk.ChunkIndex)
			}
			if err := p.store.Retain(ctx, tx, ids, indexes); err != nil {
				return err
			}
		}
		recs := make([]vectorstore.Record, len(jobs))
		for i, j := range jobs {
			c := &j.chunk
			recs[i] = vectorstore.Record{DocID: c.DocID, ChunkIndex: c.ChunkIndex, Version: c.DocVersion,
				ContentHash: c.ContentHash, Model: p.cfg.Model, Embedding: j.vector, Text: c.Text, Metadata: c.Metadata}
		}
		if _, err := p.store.Upsert(ctx, tx, recs); err != nil {
			return err
		}
		docIDs, indexes, versions, attempts := make([]string, len(jobs)), make([]int32, len(jobs)), make([]int64, len(jobs)), make([]int32, len(jobs))
		for i, j := range jobs {
			docIDs[i], indexes[i], versions[i], attempts[i] = j.chunk.DocID, int32(j.chunk.ChunkIndex), j.chunk.DocVersion, int32(j.Delivered)
		}
		// One statement marks the manifest stored and resolves the chunks'
		// dead letters, if any: replays and late redeliveries close the loop
		// in the same transaction, at no extra round trip. A stored chunk's
		// job is cleared: its text now lives in chunk_embeddings and nothing
		// republishes a stored chunk (retention, migration 00012).
		if _, err := tx.Exec(ctx, `
			WITH t AS (
				SELECT * FROM unnest($1::text[], $2::int4[], $3::int8[], $4::int4[]) AS t(doc_id, chunk_index, version, attempts)),
			resolved AS (
				UPDATE dead_letters d SET resolved_at = now()
				FROM t WHERE d.doc_id = t.doc_id AND d.chunk_index = t.chunk_index
				  AND d.version <= t.version AND d.resolved_at IS NULL)
			UPDATE ingest_manifest m
			SET status = 'stored', attempts = t.attempts, last_error_class = NULL, job = NULL, updated_at = now()
			FROM t
			WHERE m.doc_id = t.doc_id AND m.chunk_index = t.chunk_index AND m.version = t.version
			  AND m.status IN ('pending', 'parked')`,
			docIDs, indexes, versions, attempts); err != nil {
			return fmt.Errorf("mark stored: %w", err)
		}
		if err := p.complete(ctx, tx, docs); err != nil {
			return err
		}
		for _, j := range jobs {
			j.Outcome = Stored
			if !j.chunk.PublishedAt.IsZero() {
				p.metrics.EndToEnd.Observe(now.Sub(j.chunk.PublishedAt).Seconds())
			}
		}
		return nil
	})
}

// complete moves each document to ready once every chunk of its current
// version is stored — serving that version from then on, and pruning what
// older versions left behind — or to failed while any is parked, when
// search keeps serving the version it replaces.
func (p *Pipeline) complete(ctx context.Context, tx pgx.Tx, docs []string) error {
	rows, err := tx.Query(ctx, `
		WITH c AS (
			SELECT m.doc_id,
			       count(*) FILTER (WHERE m.status = 'stored') AS stored,
			       count(*) FILTER (WHERE m.status = 'parked') AS parked
			FROM ingest_manifest m JOIN documents d USING (doc_id)
			WHERE m.doc_id = ANY($1) AND d.doc_id = ANY($1)
			  AND m.version = d.version AND m.chunk_index < d.chunk_count
			GROUP BY m.doc_id)
		UPDATE documents d
		SET status = CASE WHEN c.stored = d.chunk_count THEN 'ready'
		                  WHEN c.parked > 0 THEN 'failed'
		                  ELSE 'processing' END,
		    live_version = CASE WHEN c.stored = d.chunk_count THEN d.version ELSE d.live_version END,
		    updated_at = now()
		FROM c WHERE d.doc_id = c.doc_id
		RETURNING d.doc_id, d.chunk_count, d.status = 'ready' AND d.version > 1`, docs)
	if err != nil {
		return fmt.Errorf("complete documents: %w", err)
	}
	// Only a later version can leave chunks beyond its count behind.
	type ready struct {
		docID string
		count int
	}
	var done []ready
	for rows.Next() {
		var r ready
		var prune bool
		if err := rows.Scan(&r.docID, &r.count, &prune); err != nil {
			rows.Close()
			return fmt.Errorf("complete documents: %w", err)
		}
		if prune {
			done = append(done, r)
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("complete documents: %w", err)
	}
	released := make([]string, 0, len(done))
	for _, r := range done {
		if _, err := p.store.PruneVersion(ctx, tx, r.docID, r.count); err != nil {
			return fmt.Errorf("prune %s: %w", r.docID, err)
		}
		released = append(released, r.docID)
	}
	return p.store.Release(ctx, tx, released)
}

func distinctDocs(jobs []*Job) []string {
	seen := make(map[string]bool, len(jobs))
	docs := make([]string, 0, len(jobs))
	for _, j := range jobs {
		if !seen[j.chunk.DocID] {
			seen[j.chunk.DocID] = true
			docs = append(docs, j.chunk.DocID)
		}
	}
	sort.Strings(docs)
	return docs
}
