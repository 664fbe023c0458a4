package erase

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// insertRequest records request id: every delete, dry run or executed.
func insertRequest(ctx context.Context, tx pgx.Tx, id string, r Request, selected int) error {
	if _, err := tx.Exec(ctx, `
		INSERT INTO deletion_requests (request_id, requested_by, reason, source_id, run_id, dry_run, selected)
		VALUES ($1, $2, $3, $4, NULLIF($5, ''), $6, $7)`,
		id, r.By, r.Reason, r.SourceID, r.RunID, !r.Execute, selected); err != nil {
		return fmt.Errorf("record delete request: %w", err)
	}
	return nil
}

// insertDeletions records what request erased of each document, and how
// many it deleted.
func insertDeletions(ctx context.Context, tx pgx.Tx, request, source string, ds []Deleted) error {
	n := len(ds)
	ids, natives, versions := make([]string, n), make([]string, n), make([]int64, n)
	vectors, texts, jobs, payloads, letters := make([]int32, n), make([]int32, n), make([]int32, n), make([]int32, n), make([]int32, n)
	for i, d := range ds {
		ids[i], natives[i], versions[i] = d.DocID, d.NativeID, d.Version
		vectors[i], texts[i], jobs[i], payloads[i], letters[i] = int32(d.Vectors), int32(d.TextRows), int32(d.Jobs), int32(d.Payloads), int32(d.DeadLetters)
	}
	if _, err := tx.Exec(ctx, `
		INSERT INTO document_deletions (request_id, doc_id, source_id, source_native_id, version,
		                                vectors, text_rows, jobs, payloads, dead_letters)
		SELECT $1, t.doc_id, $2, t.native, t.version, t.vectors, t.texts, t.jobs, t.payloads, t.letters
		FROM unnest($3::text[], $4::text[], $5::int8[], $6::int4[], $7::int4[], $8::int4[], $9::int4[], $10::int4[])
		     AS t(doc_id, native, version, vectors, texts, jobs, payloads, letters)`,
		request, source, ids, natives, versions, vectors, texts, jobs, payloads, letters); err != nil {
		return fmt.Errorf("record deletions: %w", err)
	}
	// deletion_requests is append-only below the owner: the count is
	// read from document_deletions.
	return nil
}
