package deadletter

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// Reader runs the read statements of this package: pgx.Tx, *pgx.Conn
// and *pgxpool.Pool satisfy it.
type Reader interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}
