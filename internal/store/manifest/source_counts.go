package manifest

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// SourceCount is what documents holds of one source.
type SourceCount struct {
	// Live are the documents not deleted; Ready those of them whose
	// chunks are all stored; Deleted the tombstones.
	Live, Ready, Deleted int64
	// LastChange is when a document of the source last changed.
	LastChange time.Time
	// Files is whether its documents came from files (they have a path).
	Files bool
}

// SourceCounts counts the documents of every source that has any.
func SourceCounts(ctx context.Context, q Querier) (map[string]SourceCount, error) {
	rows, err := q.Query(ctx, `
		SELECT source_id, count(*) FILTER (WHERE status <> `+SQLDocDeleted+`), count(*) FILTER (WHERE status = 'ready'),
			count(*) FILTER (WHERE status = `+SQLDocDeleted+`), max(updated_at), coalesce(bool_or(metadata ? 'path'), false)
		FROM documents GROUP BY source_id`)
	if err != nil {
		return nil, fmt.Errorf("count documents by source: %w", err)
	}
	out := map[string]SourceCount{}
	var src string
	var c SourceCount
	if _, err := pgx.ForEachRow(rows, []any{&src, &c.Live, &c.Ready, &c.Deleted, &c.LastChange, &c.Files}, func() error {
		out[src] = c
		return nil
	}); err != nil {
		return nil, fmt.Errorf("count documents by source: %w", err)
	}
	return out, nil
}

// LiveNativeIDs lists the native ids of source's documents that are not
// deleted.
func LiveNativeIDs(ctx context.Context, q Querier, source string) ([]string, error) {
	rows, err := q.Query(ctx, `SELECT source_native_id FROM documents WHERE source_id = $1 AND status <> `+SQLDocDeleted, source)
	if err != nil {
		return nil, fmt.Errorf("list documents of %s: %w", source, err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("list documents of %s: %w", source, err)
	}
	return ids, nil
}
