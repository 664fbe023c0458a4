package bulk

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// batch is a ledger row as the builder and poller read it.
type batch struct {
	id                int64
	generation        int
	source            string
	state             State
	requests          int
	inputFileID       string
	providerID        string
	outputFileID      string
	errorFileID       string
	outputDone        int
	errorDone         int
	createRequestedAt *time.Time
	cancelRequested   bool
	lastError         string
	uploadRequestedAt *time.Time
}

const batchColumns = `batch_id, generation, source_id, state, requests, coalesce(input_file_id, ''),
	coalesce(provider_batch_id, ''), coalesce(output_file_id, ''), coalesce(error_file_id, ''),
	output_lines_done, error_lines_done, create_requested_at, cancel_requested_at IS NOT NULL, coalesce(last_error, ''), upload_requested_at`

func scanBatch(row pgx.Row) (*batch, error) {
	var b batch
	err := row.Scan(&b.id, &b.generation, &b.source, &b.state, &b.requests, &b.inputFileID, &b.providerID,
		&b.outputFileID, &b.errorFileID, &b.outputDone, &b.errorDone, &b.createRequestedAt, &b.cancelRequested, &b.lastError, &b.uploadRequestedAt)
	return &b, err
}

func loadBatch(ctx context.Context, q Querier, id int64) (*batch, error) {
	b, err := scanBatch(q.QueryRow(ctx, `SELECT `+batchColumns+` FROM bulk_batches WHERE batch_id = $1`, id))
	if err != nil {
		return nil, fmt.Errorf("load batch %d: %w", id, err)
	}
	return b, nil
}

// batchIDs lists the batches in states, oldest first.
func batchIDs(ctx context.Context, q Querier, states ...State) ([]int64, error) {
	names := make([]string, len(states))
	for i, s := range states {
		names[i] = string(s)
	}
	rows, err := q.Query(ctx, `SELECT batch_id FROM bulk_batches WHERE state = ANY($1) ORDER BY batch_id`, names)
	if err != nil {
		return nil, fmt.Errorf("list batches: %w", err)
	}
	return pgx.CollectRows(rows, pgx.RowTo[int64])
}

// lockClass is the first key of the advisory locks on batches.
const lockClass = 0x5b1c

// withLock runs fn holding a session advisory lock on batch id, so that
// one process at a time moves a batch; a process that dies releases it
// with its session. It reports false, without running fn, when another
// holds the lock.
func withLock(ctx context.Context, pool *pgxpool.Pool, id int64, fn func() error) (bool, error) {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return false, fmt.Errorf("lock batch %d: %w", id, err)
	}
	defer conn.Release()
	var got bool
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1, $2)`, int32(lockClass), int32(id)).Scan(&got); err != nil {
		return false, fmt.Errorf("lock batch %d: %w", id, err)
	}
	if !got {
		return false, nil
	}
	defer func() {
		// A lock that cannot be released goes with the connection.
		if _, err := conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1, $2)`, int32(lockClass), int32(id)); err != nil {
			_ = conn.Conn().Close(context.WithoutCancel(ctx))
		}
	}()
	return true, fn()
}

// recordError keeps the last error of a batch, for operators.
func recordError(ctx context.Context, q Querier, id int64, now time.Time, err error) {
	_, _ = q.Exec(ctx, `UPDATE bulk_batches SET last_error = $2, updated_at = $3 WHERE batch_id = $1`, id, err.Error(), now)
}

// countMembers is a batch's members counted afresh, for the UPDATE of
// its row whose batch_id is $1: admissions that join a line the batch
// holds do not count themselves (see Ledger.insert).
const countMembers = `(SELECT count(*) FROM bulk_members m WHERE m.batch_id = $1)`
