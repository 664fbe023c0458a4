package manifest

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// DocumentName is where a document came from: its source and its id in
// that source (a path, a row key).
type DocumentName struct {
	SourceID, SourceNativeID string
}

// Names maps each of ids that names a document to where it came from;
// an id with no document is absent.
func Names(ctx context.Context, q Querier, ids []string) (map[string]DocumentName, error) {
	rows, err := q.Query(ctx, `SELECT doc_id, source_id, source_native_id FROM documents WHERE doc_id = ANY($1)`, ids)
	if err != nil {
		return nil, fmt.Errorf("read documents' names: %w", err)
	}
	names := make(map[string]DocumentName, len(ids))
	var id string
	var name DocumentName
	if _, err := pgx.ForEachRow(rows, []any{&id, &name.SourceID, &name.SourceNativeID}, func() error {
		names[id] = name
		return nil
	}); err != nil {
		return nil, fmt.Errorf("read documents' names: %w", err)
	}
	return names, nil
}
