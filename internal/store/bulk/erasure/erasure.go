// Package erasure is bulk mode's part of deleting a document, apart from
// package bulk so that erasing a document (package erase, which the
// console runs) does not link the Batch API client.
package erasure

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5/pgconn"
)

// Execer runs a statement: the caller's transaction.
type Execer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// Members deletes every bulk member of the documents docIDs, whatever its
// batch and state, in the delete's transaction. A pending member held
// the chunk's text; a result that comes back for it later finds no
// pending member and is dropped, and the store's version guard refuses
// the deleted version anyway. A request file already uploaded with the
// text is deleted at the provider by the bulk poller's next pass, which
// finds its batch holding fewer lines than it uploaded.
func Members(ctx context.Context, q Execer, docIDs []string) (int64, error) {
	tag, err := q.Exec(ctx, `DELETE FROM bulk_members WHERE doc_id = ANY($1)`, docIDs)
	if err != nil {
		return 0, fmt.Errorf("erase bulk members: %w", err)
	}
	return tag.RowsAffected(), nil
}
