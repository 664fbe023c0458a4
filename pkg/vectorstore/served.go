package vectorstore

import (
	"context"
	"fmt"
)

// retainSQL copies, before they are replaced, the rows of the given
// chunks that belong to the version search is serving while a newer one
// is being indexed (documents.live_version below documents.version).
const retainSQL = `
INSERT INTO chunk_embeddings_previous
SELECT c.* FROM unnest($1::text[], $2::int4[]) AS t(doc_id, chunk_index)
JOIN chunk_embeddings c ON c.doc_id = t.doc_id AND c.chunk_index = t.chunk_index
JOIN documents d ON d.doc_id = c.doc_id
WHERE c.version = d.live_version AND d.live_version < d.version
ON CONFLICT (doc_id, chunk_index) DO NOTHING`

// Retain keeps the served rows of the given chunks searchable while a new
// version of their document replaces them: call it in the transaction
// that upserts the new version's records, before Upsert. Chunks of
// documents that are not being re-indexed cost one index lookup each. A
// later generation's store returns ErrNoRetention.
func (p *Postgres) Retain(ctx context.Context, db DB, docIDs []string, indexes []int32) error {
	if p.generation != firstGeneration {
		return fmt.Errorf("%w: generation %d", ErrNoRetention, p.generation)
	}
	if len(docIDs) == 0 {
		return nil
	}
	if _, err := db.Exec(ctx, retainSQL, docIDs, indexes); err != nil {
		return fmt.Errorf("vectorstore: retain served chunks: %w", err)
	}
	return nil
}

// Release drops what Retain kept for the given documents: call it once
// their new version is complete and served, or gone. A later
// generation's store returns ErrNoRetention.
func (p *Postgres) Release(ctx context.Context, db DB, docIDs []string) error {
	if p.generation != firstGeneration {
		return fmt.Errorf("%w: generation %d", ErrNoRetention, p.generation)
	}
	if len(docIDs) == 0 {
		return nil
	}
	if _, err := db.Exec(ctx, `DELETE FROM chunk_embeddings_previous WHERE doc_id = ANY($1)`, docIDs); err != nil {
		return fmt.Errorf("vectorstore: release retained chunks: %w", err)
	}
	return nil
}

// servedTwiceSQL counts the chunks search would return twice: rows it
// serves, by the same rule as the search statements, from both
// chunk_embeddings and chunk_embeddings_previous. The primary keys make a
// second row in one table impossible; Retain and Release keep the two
// tables disjoint for the served version, and this is what checks it.
const servedTwiceSQL = `
SELECT count(*) FROM (
	SELECT doc_id, chunk_index FROM (
		SELECT c.doc_id, c.chunk_index FROM chunk_embeddings c
		JOIN documents d ON d.doc_id = c.doc_id
		WHERE (d.status = ` + sqlDocReady + ` AND c.version = d.version) OR (d.status <> ` + sqlDocReady + ` AND c.version = d.live_version)
		UNION ALL
		SELECT p.doc_id, p.chunk_index FROM chunk_embeddings_previous p
		JOIN documents d ON d.doc_id = p.doc_id AND d.live_version = p.version
		WHERE d.status <> ` + sqlDocReady + `
	) served
	GROUP BY doc_id, chunk_index HAVING count(*) > 1
) twice`

// CountServedTwice returns how many chunks search would serve twice, once
// from each table. Anything but zero is a defect for reconcile to report.
func CountServedTwice(ctx context.Context, db DB) (int, error) {
	var n int
	if err := db.QueryRow(ctx, servedTwiceSQL).Scan(&n); err != nil {
		return 0, fmt.Errorf("vectorstore: count chunks served twice: %w", err)
	}
	return n, nil
}
