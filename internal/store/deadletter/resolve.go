package deadletter

import (
	"context"
	"fmt"

	"github.com/sluicehq/sluice/internal/store/manifest"
)

// resolveSQL resolves the open dead letters of each row of the unnest:
// those of its chunk (of every chunk of its document when the row has no
// chunk index) at its version or an older one. The doc_id = ANY($1)
// lets the planner use the index on doc_id before the join.
const resolveSQL = `
		UPDATE dead_letters d SET resolved_at = now(), resolution = NULLIF($4, '')
		FROM unnest($1::text[], $2::int4[], $3::int8[]) AS t(doc_id, chunk_index, version)
		WHERE d.doc_id = ANY($1) AND d.doc_id = t.doc_id AND (t.chunk_index IS NULL OR d.chunk_index = t.chunk_index)
		  AND d.version <= t.version AND d.resolved_at IS NULL`

// Resolve resolves the open dead letters of the chunks c names, at each
// one's version in c.Versions or an older one, with resolution (empty
// leaves the column NULL, as the store has always left it). When
// c.Indexes is nil, every chunk of each document is resolved up to its
// version. It returns how many it resolved; dead letters already
// resolved are left alone, so resolving twice changes nothing.
func Resolve(ctx context.Context, q manifest.Querier, c manifest.Chunks, resolution manifest.Status) (int64, error) {
	if c.Len() == 0 {
		return 0, nil
	}
	tag, err := q.Exec(ctx, resolveSQL, c.DocIDs, c.Indexes, c.Versions, string(resolution))
	if err != nil {
		return 0, fmt.Errorf("resolve dead letters: %w", err)
	}
	return tag.RowsAffected(), nil
}
