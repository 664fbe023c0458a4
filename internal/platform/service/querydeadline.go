package service

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/rs/zerolog"
)

// queryDeadline is a pgx tracer that bounds every statement, query, batch
// and COPY a connection runs — a transaction's BEGIN and COMMIT included —
// by a client-side deadline. The server's statement_timeout cannot save a
// client whose connection went silent: the server never answers, so only
// a deadline on the client's own wait ends it. LISTEN's wait for a
// notification is not a statement and stays unbounded.
//
// Each deadline that fires is logged at warn, so that a silent connection
// shows in the logs the moment a client gives up on it, not only once
// the caller's retries are spent.
type queryDeadline struct {
	timeout time.Duration
	log     zerolog.Logger
}

var (
	_ pgx.QueryTracer    = queryDeadline{}
	_ pgx.BatchTracer    = queryDeadline{}
	_ pgx.CopyFromTracer = queryDeadline{}
)

// cancelKey holds, in a traced call's context, the cancel function of the
// deadline its start added.
type cancelKey struct{}

func (d queryDeadline) start(ctx context.Context) context.Context {
	ctx, cancel := context.WithTimeout(ctx, d.timeout)
	return context.WithValue(ctx, cancelKey{}, cancel)
}

func (d queryDeadline) end(ctx context.Context, what string) {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		d.log.Warn().Str("dependency", "postgres").Str("call", what).Dur("timeout", d.timeout).
			Msg("sql deadline fired: PostgreSQL did not answer in time")
	}
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
	d.end(ctx, "statement")
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
	d.end(ctx, "batch")
}

// TraceCopyFromStart adds the deadline to a COPY.
func (d queryDeadline) TraceCopyFromStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceCopyFromStartData) context.Context {
	return d.start(ctx)
}

// TraceCopyFromEnd releases the COPY's deadline.
func (d queryDeadline) TraceCopyFromEnd(ctx context.Context, _ *pgx.Conn, _ pgx.TraceCopyFromEndData) {
	d.end(ctx, "copy")
}

// boundSQL makes every connection of the pool give up on PostgreSQL after
// timeout: connecting, each statement on the client's side, and the
// statement's work on the server's (statement_timeout). Fired deadlines
// are logged to log.
func boundSQL(pcfg *pgxpool.Config, timeout time.Duration, log zerolog.Logger) {
	if timeout <= 0 {
		return
	}
	if pcfg.ConnConfig.ConnectTimeout == 0 || pcfg.ConnConfig.ConnectTimeout > timeout {
		pcfg.ConnConfig.ConnectTimeout = timeout
	}
	pcfg.ConnConfig.RuntimeParams["statement_timeout"] = strconv.FormatInt(timeout.Milliseconds(), 10)
	pcfg.ConnConfig.Tracer = queryDeadline{timeout: timeout, log: log}
}
