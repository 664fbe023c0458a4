package classify

import (
	"errors"
	"fmt"
	"time"
)

// Disposition is what the pipeline does with a failed unit of work.
type Disposition string

// The four dispositions of DESIGN §6. Their string values appear in DLQ
// subjects (dlq.<disposition>.<source>) and in the dead_letters table.
const (
	// Retry is a transient fault: back off and try again, within a budget.
	Retry Disposition = "retry"
	// Quarantine is a permanent fault: park at once for a human.
	Quarantine Disposition = "quarantine"
	// Ambiguous is an unrecognised fault: a few bounded retries, then park.
	Ambiguous Disposition = "ambiguous"
	// Escalate is a compliance fault: park, alert, never auto-replay.
	Escalate Disposition = "escalate"
)

// Stable error_class strings. Operators filter and alert on these; never
// rename one without a migration note.
const (
	// ClassTimeout: a deadline passed (context, socket, statement_timeout).
	ClassTimeout = "timeout"
	// ClassConnection: the connection failed, was reset, refused or closed.
	ClassConnection = "connection"
	// ClassCanceled: the caller's context was canceled, usually by shutdown.
	// It is Retry so that stopping a worker never parks the chunk in hand.
	ClassCanceled = "canceled"
	// ClassRateLimited: the remote side throttled us (HTTP 429).
	ClassRateLimited = "rate_limited"
	// ClassServerError: the remote side failed on its own (HTTP 5xx, 425).
	ClassServerError = "server_error"
	// ClassDatabaseTransient: PostgreSQL asked us to try again
	// (serialization failure, deadlock, shutdown, too many connections).
	ClassDatabaseTransient = "database_transient"
	// ClassDatabaseSetup: the database is not what this build expects
	// (missing table or column, missing database, rejected credentials).
	// Every chunk would fail alike, so it is Ambiguous, never Quarantine.
	ClassDatabaseSetup = "database_setup"
	// ClassBrokerUnavailable: NATS did not answer: no server, no
	// responder, or a JetStream cluster electing its leaders.
	ClassBrokerUnavailable = "broker_unavailable"
	// ClassCircuitOpen: the breaker is open; the call was not attempted.
	ClassCircuitOpen = "circuit_open"
	// ClassBadRequest: HTTP 400 or another 4xx without a class of its own.
	ClassBadRequest = "bad_request"
	// ClassUnauthorized: HTTP 401 or 403.
	ClassUnauthorized = "unauthorized"
	// ClassNotFound: HTTP 404.
	ClassNotFound = "not_found"
	// ClassPayloadTooLarge: HTTP 413.
	ClassPayloadTooLarge = "payload_too_large"
	// ClassContextLength: the input is longer than the model accepts.
	ClassContextLength = "context_length_exceeded"
	// ClassUnprocessable: HTTP 422.
	ClassUnprocessable = "unprocessable"
	// ClassInvalidEncoding: the text is not valid UTF-8, even after the
	// fallback codec.
	ClassInvalidEncoding = "invalid_encoding"
	// ClassEmptyText: nothing left to embed once the text is normalised.
	ClassEmptyText = "empty_text"
	// ClassDimensionMismatch: the vector's length is not the configured one.
	ClassDimensionMismatch = "dimension_mismatch"
	// ClassInvalidVector: the vector holds NaN or ±Inf.
	ClassInvalidVector = "invalid_vector"
	// ClassInvalidMessage: the job message cannot be decoded or validated.
	ClassInvalidMessage = "invalid_message"
	// ClassConstraint: PostgreSQL rejected the row by an integrity
	// constraint (SQLSTATE class 23).
	ClassConstraint = "constraint_violation"
	// ClassDatabasePermanent: PostgreSQL rejected the value itself (SQLSTATE
	// class 22 data exception, class 54 program limit exceeded).
	ClassDatabasePermanent = "database_permanent"
	// ClassPolicyViolation: a compliance rule matched; see Code for which.
	ClassPolicyViolation = "policy_violation"
	// ClassUnknown: the classifier did not recognise the error.
	ClassUnknown = "unknown"
	// ClassTransientExhausted: parked after the retry budget was spent.
	ClassTransientExhausted = "transient_exhausted"
	// ClassAmbiguousExhausted: parked after the ambiguous budget was spent.
	ClassAmbiguousExhausted = "ambiguous_exhausted"
	// ClassReplayExhausted: parked after max_replays replay generations.
	ClassReplayExhausted = "replay_exhausted"
	// ClassSoftTimeLimit: the embed stage of a batch ran past the soft
	// time limit and was cut off; retried like any timeout.
	ClassSoftTimeLimit = "soft_time_limit"
	// ClassTimeoutExhausted: parked after the delivery budget was spent
	// on soft time limits, before JetStream's hard redelivery.
	ClassTimeoutExhausted = "timeout_exhausted"
	// ClassTooLarge: an input, record, chunk, metadata or message over a
	// configured size limit.
	ClassTooLarge = "too_large"
	// ClassUnsupportedFormat: a file whose content is of a format that
	// cannot be read as text (an image, unknown binary), or a document
	// format no extractor is configured for.
	ClassUnsupportedFormat = "unsupported_format"
	// ClassRunCancelled: the chunk's run was cancelled by an operator
	// before the chunk was stored.
	ClassRunCancelled = "run_cancelled"
)

// Sentinels that callers branch on with errors.Is. An *Error matches the one
// chosen by its Disposition; an Ambiguous one matches none. Classify also
// honours a bare sentinel wrapped with %w, with class unknown.
var (
	// ErrRetryable matches errors whose disposition is Retry.
	ErrRetryable = errors.New("retryable")
	// ErrPermanent matches errors whose disposition is Quarantine.
	ErrPermanent = errors.New("permanent")
	// ErrEscalate matches errors whose disposition is Escalate.
	ErrEscalate = errors.New("escalate")
)

// Error is a classified error: it carries its disposition, a stable class,
// an optional code (an HTTP status, an SQLSTATE, a policy rule), and for
// retryable errors the delay the remote side asked for. Classify trusts it
// over anything it wraps.
type Error struct {
	// Disposition is what to do with the work. An empty or unknown value is
	// treated as Ambiguous.
	Disposition Disposition
	// Class is one of the Class* strings. Empty is treated as ClassUnknown.
	Class string
	// Code is a finer identifier: "http_503", "sqlstate_40001", the name of
	// the policy rule that matched. Empty when the class says it all.
	Code string
	// RetryAfter is the minimum wait the remote side asked for, zero if none.
	RetryAfter time.Duration
	// Err is the cause, reachable with errors.Is and errors.As.
	Err error
}

var _ error = (*Error)(nil)

// Error implements error.
func (e *Error) Error() string {
	msg := string(e.Disposition) + " " + e.Class
	if e.Code != "" {
		msg += " (" + e.Code + ")"
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Is matches the sentinel that corresponds to the error's disposition.
func (e *Error) Is(target error) bool {
	switch target {
	case ErrRetryable:
		return e.Disposition == Retry
	case ErrPermanent:
		return e.Disposition == Quarantine
	case ErrEscalate:
		return e.Disposition == Escalate
	}
	return false
}

// Permanent marks err as a permanent fault of the given class: the chunk is
// parked at once.
func Permanent(class string, err error) error {
	return &Error{Disposition: Quarantine, Class: class, Err: err}
}

// Permanentf is Permanent with a formatted cause.
func Permanentf(class, format string, args ...any) error {
	return Permanent(class, fmt.Errorf(format, args...))
}

// Retryable marks err as a transient fault of the given class.
func Retryable(class string, err error) error {
	return &Error{Disposition: Retry, Class: class, Err: err}
}

// RetryAfter marks err as transient (class rate_limited) with a minimum
// delay before the next try.
func RetryAfter(d time.Duration, err error) error {
	return &Error{Disposition: Retry, Class: ClassRateLimited, RetryAfter: d, Err: err}
}

// EscalateRule marks err as a compliance fault raised by the named policy
// rule; the rule name becomes the Code so alerts can say which rule fired.
func EscalateRule(rule string, err error) error {
	return &Error{Disposition: Escalate, Class: ClassPolicyViolation, Code: rule, Err: err}
}

// StatusError is an HTTP error reply from a remote API. Classify maps it
// with FromStatus.
type StatusError struct {
	// StatusCode is the HTTP status of the reply.
	StatusCode int
	// APICode is the machine-readable code of the error body (OpenAI's
	// error.code), if any.
	APICode string
	// Message is the human-readable message of the error body. It is for
	// logs only; classification never reads it.
	Message string
	// RetryAfter is the parsed Retry-After header, zero if absent.
	RetryAfter time.Duration
}

var _ error = (*StatusError)(nil)

// Error implements error.
func (e *StatusError) Error() string {
	msg := fmt.Sprintf("http %d", e.StatusCode)
	if e.APICode != "" {
		msg += " " + e.APICode
	}
	if e.Message != "" {
		msg += ": " + e.Message
	}
	return msg
}
