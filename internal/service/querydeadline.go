package service

import (
	"context"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// queryDeadline is a pgx tracer that bounds every statement, query, batch
// and COPY a connection runs — a transaction's BEGIN and COMMIT included —
// by a client-side deadline. The server's statement_timeout cannot save a
// client whose connection went silent: the server never answers, so only
// a deadline on the client's own wait ends it. LISTEN's wait for a
// notification is not a statement and stays unbounded.
type queryDeadline time.Duration

var (
	_ pgx.QueryTracer    = queryDeadline(0)
	_ pgx.BatchTracer    = queryDeadline(0)
	_ pgx.CopyFromTracer = queryDeadline(0)
)

// cancelKey holds, in a traced call's context, the cancel function of the
// deadline its start added.
type cancelKey struct{}

func (d queryDeadline) start(ctx context.Context) context.Context {
	ctx, cancel := context.WithTimeout(ctx, time.Duration(d))
	return context.WithValue(ctx, cancelKey{}, cancel)
}

func (queryDeadline) end(ctx context.Context) {
	if cancel, ok := ctx.Value(cancelKey{}).(context.CancelFunc); ok {
		cancel()
	}
}

// TraceQueryStart adds the deadline to an Exec or Query.
func (d queryDeadline) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	return d.start(ctx)
}

// TraceQueryEnd releases the deadline once the call, or its rows, are done.
func (d queryDeadline) TraceQueryEnd(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryEndData) {
	d.end(ctx)
}

// TraceBatchStart adds the deadline to a batch.
func (d queryDeadline) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	return d.start(ctx)
}

// TraceBatchQuery is called for each query of a batch; the batch's
// deadline covers it.
func (queryDeadline) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}

// TraceBatchEnd releases the batch's deadline.
func (d queryDeadline) TraceBatchEnd(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchEndData) {
	d.end(ctx)
}

// TraceCopyFromStart adds the deadline to a COPY.
func (d queryDeadline) TraceCopyFromStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceCopyFromStartData) context.Context {
	return d.start(ctx)
}

// TraceCopyFromEnd releases the COPY's deadline.
func (d queryDeadline) TraceCopyFromEnd(ctx context.Context, _ *pgx.Conn, _ pgx.TraceCopyFromEndData) {
	d.end(ctx)
}

// boundSQL makes every connection of the pool give up on PostgreSQL after
// timeout: connecting, each statement on the client's side, and the
// statement's work on the server's (statement_timeout).
func boundSQL(pcfg *pgxpool.Config, timeout time.Duration) {
	if timeout <= 0 {
		return
	}
	if pcfg.ConnConfig.ConnectTimeout == 0 || pcfg.ConnConfig.ConnectTimeout > timeout {
		pcfg.ConnConfig.ConnectTimeout = timeout
	}
	pcfg.ConnConfig.RuntimeParams["statement_timeout"] = strconv.FormatInt(timeout.Milliseconds(), 10)
	pcfg.ConnConfig.Tracer = queryDeadline(timeout)
}
