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
// documents that are not being re-indexed cost one index lookup each.
func (p *Postgres) Retain(ctx context.Context, db DB, docIDs []string, indexes []int32) error {
	if len(docIDs) == 0 {
		return nil
	}
	if _, err := db.Exec(ctx, retainSQL, docIDs, indexes); err != nil {
		return fmt.Errorf("vectorstore: retain served chunks: %w", err)
	}
	return nil
}

// Release drops what Retain kept for the given documents: call it once
// their new version is complete and served, or gone.
func (p *Postgres) Release(ctx context.Context, db DB, docIDs []string) error {
	if len(docIDs) == 0 {
		return nil
	}
	if _, err := db.Exec(ctx, `DELETE FROM chunk_embeddings_previous WHERE doc_id = ANY($1)`, docIDs); err != nil {
		return fmt.Errorf("vectorstore: release retained chunks: %w", err)
	}
	return nil
}
