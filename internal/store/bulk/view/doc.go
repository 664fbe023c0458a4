// Package view is the operator's read of bulk mode's ledger (package
// bulk, schema 29): batches listed and shown with their members counted
// by state, never their text, and the states themselves. It is apart
// from package bulk so that the console, which may not link the Batch
// API client or the embedder, reads the ledger too.
package view

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// Querier runs the reads: a pool, a connection or a transaction.
type Querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}
