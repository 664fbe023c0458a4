package classify

import (
	"context"
	"errors"
	"io"
	"net"
	"net/url"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// Decision is the classifier's verdict on one error.
type Decision struct {
	// Disposition is what to do with the work. It is empty only for a nil
	// error.
	Disposition Disposition
	// Class is the stable error_class stored on the dead letter and used as
	// a metric label: one of the Class* constants.
	Class string
	// Code narrows Class down: "http_503", "sqlstate_40001", or the policy
	// rule that matched. Empty when Class says it all.
	Code string
	// RetryAfter is the minimum wait the remote side asked for, zero if it
	// asked for none. It is only set when another attempt will follow
	// (Retry, Ambiguous); wait for it with Backoff.DelayAtLeast.
	RetryAfter time.Duration
}

// connectionErrors are the causes that mean the connection, not the request,
// failed. A request cut off this way may or may not have reached the server,
// which is safe to repeat because every write in Sluice is idempotent.
var connectionErrors = []error{
	syscall.ECONNRESET,
	syscall.ECONNREFUSED,
	syscall.ECONNABORTED,
	syscall.EPIPE,
	syscall.EHOSTUNREACH,
	syscall.ENETUNREACH,
	io.ErrUnexpectedEOF,
	net.ErrClosed,
}

// Classify decides what to do about err. It looks through the whole wrapped
// chain and takes the first rule that applies, in this order:
//
//  1. nil: the zero Decision, whose empty Disposition is none of the four;
//     success needs no classifying.
//  2. An *Error: its own fields. A Code or RetryAfter it leaves empty is
//     taken from what it wraps, so Permanent(ClassContextLength, statusErr)
//     still records "http_400".
//  3. A *StatusError: FromStatus.
//  4. A NATS or JetStream error (see fromBroker): a JetStream API error by
//     its code, else by its status as FromStatus; the client's timeouts
//     (Retry, timeout); no responders or a connection down or coming back
//     (Retry, broker_unavailable); a message over max_payload
//     (Quarantine, payload_too_large).
//  5. A *pgconn.PgError with a SQLSTATE listed below.
//  6. context.Canceled: Retry, class canceled. A canceled context almost
//     always means shutdown, which must never park the chunk in hand.
//  7. context.DeadlineExceeded, a pgconn timeout, or a net.Error whose
//     Timeout() is true: Retry, class timeout.
//  8. A *net.OpError, *net.DNSError or *pgconn.ConnectError, a reset,
//     refused, aborted or broken connection (syscall errnos, net.ErrClosed,
//     io.ErrUnexpectedEOF), or an HTTP round trip that ended in io.EOF:
//     Retry, class connection.
//  9. An error pgconn reports as SafeToRetry: Retry, class
//     database_transient.
//  10. ErrRetryable, ErrPermanent or ErrEscalate wrapped bare: their
//     disposition, class unknown (policy_violation for ErrEscalate).
//  11. Anything else: Ambiguous, class unknown. A *pgconn.PgError whose
//     SQLSTATE is not listed still lends its Code ("sqlstate_25P02").
//
// SQLSTATEs, with Code "sqlstate_<code>":
//
//   - 40001, 40P01, 55P03, 57P01, 57P02, 57P03, 25006, classes 08 and 53:
//     Retry, database_transient. 25006 (read-only transaction) is what a
//     pool sees while it still talks to a demoted primary after a failover.
//   - 57014 (statement_timeout or cancel request): Retry, timeout.
//   - Class 23 (23514 CHECK, 23502 NOT NULL, …): Quarantine,
//     constraint_violation; except 23505 unique, 23503 foreign key and 23P01
//     exclusion, which depend on other rows and can clear on a retry:
//     Ambiguous, constraint_violation.
//   - Class 22 data exception (22P02, 22021 invalid byte sequence, 22001
//     string too long, pgvector's 22000 for a wrong dimension or NaN) and
//     class 54 program limit exceeded: Quarantine, database_permanent. These
//     reject the value itself.
//   - Classes 42 (undefined table or column, syntax, privilege), 28
//     (authorization), 3D (database) and 3F (schema): Ambiguous,
//     database_setup. They are deployment faults, identical for every chunk;
//     quarantining them would park the whole corpus behind a missing
//     migration, so they get the bounded ambiguous budget instead.
func Classify(err error) Decision {
	if err == nil {
		return Decision{}
	}
	if e, ok := errors.AsType[*Error](err); ok {
		return fromError(e)
	}
	if e, ok := errors.AsType[*StatusError](err); ok {
		return FromStatus(e.StatusCode, e.APICode, e.RetryAfter)
	}
	if d, ok := fromBroker(err); ok {
		return d
	}
	var sqlCode string
	if e, ok := errors.AsType[*pgconn.PgError](err); ok {
		if d, ok := fromSQLState(e.Code); ok {
			return d
		}
		sqlCode = sqlStateCode(e.Code)
	}
	d := fromCause(err)
	if d.Code == "" {
		d.Code = sqlCode
	}
	return d
}

// IsRetryable reports whether err is a transient fault (disposition Retry).
// It is false for nil and for Ambiguous errors, whose retries are budgeted
// separately.
func IsRetryable(err error) bool {
	return Classify(err).Disposition == Retry
}

// IsDataError reports whether err is the work's own fault (disposition
// Quarantine or Escalate) rather than a dependency's. Circuit breakers must
// ignore such errors: a stream of bad chunks says nothing about the health
// of the embedding API or the database. It is false for nil.
func IsDataError(err error) bool {
	switch Classify(err).Disposition {
	case Quarantine, Escalate:
		return true
	}
	return false
}

func fromError(e *Error) Decision {
	d := Decision{
		Disposition: e.Disposition,
		Class:       e.Class,
		Code:        e.Code,
		RetryAfter:  max(e.RetryAfter, 0),
	}
	switch d.Disposition {
	case Retry, Quarantine, Ambiguous, Escalate:
	default:
		d.Disposition = Ambiguous
	}
	if d.Class == "" {
		d.Class = ClassUnknown
	}
	if e.Err != nil && (d.Code == "" || d.RetryAfter == 0) {
		cause := Classify(e.Err)
		if d.Code == "" {
			d.Code = cause.Code
		}
		if d.RetryAfter == 0 {
			d.RetryAfter = cause.RetryAfter
		}
	}
	if !retriesFollow(d.Disposition) {
		d.RetryAfter = 0
	}
	return d
}

// fromCause applies the rules that key off Go error types and sentinels.
func fromCause(err error) Decision {
	switch {
	case errors.Is(err, context.Canceled):
		return Decision{Disposition: Retry, Class: ClassCanceled}
	case isTimeout(err):
		return Decision{Disposition: Retry, Class: ClassTimeout}
	case isConnection(err):
		return Decision{Disposition: Retry, Class: ClassConnection}
	case pgconn.SafeToRetry(err):
		return Decision{Disposition: Retry, Class: ClassDatabaseTransient}
	case errors.Is(err, ErrEscalate):
		return Decision{Disposition: Escalate, Class: ClassPolicyViolation}
	case errors.Is(err, ErrPermanent):
		return Decision{Disposition: Quarantine, Class: ClassUnknown}
	case errors.Is(err, ErrRetryable):
		return Decision{Disposition: Retry, Class: ClassUnknown}
	}
	return Decision{Disposition: Ambiguous, Class: ClassUnknown}
}

func isTimeout(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) || pgconn.Timeout(err) {
		return true
	}
	ne, ok := errors.AsType[net.Error](err)
	return ok && ne.Timeout()
}

func isConnection(err error) bool {
	if _, ok := errors.AsType[*net.OpError](err); ok {
		return true
	}
	if _, ok := errors.AsType[*net.DNSError](err); ok {
		return true
	}
	if _, ok := errors.AsType[*pgconn.ConnectError](err); ok {
		return true
	}
	for _, target := range connectionErrors {
		if errors.Is(err, target) {
			return true
		}
	}
	// net/http reports a server that hung up before replying as a bare io.EOF
	// inside *url.Error; a bare io.EOF elsewhere means nothing in particular.
	ue, ok := errors.AsType[*url.Error](err)
	return ok && errors.Is(ue.Err, io.EOF)
}

// retriesFollow reports whether another attempt follows a failure of this
// disposition, which is when a Retry-After means anything.
func retriesFollow(d Disposition) bool {
	return d == Retry || d == Ambiguous
}
