package classify_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/sluicehq/sluice/pkg/classify"
)

// timeoutError is a net.Error such as a read deadline produces.
type timeoutError struct{}

func (timeoutError) Error() string   { return "i/o timeout" }
func (timeoutError) Timeout() bool   { return true }
func (timeoutError) Temporary() bool { return true }

// safeToRetryError stands in for pgconn's errors that fail before anything
// was sent to the server.
type safeToRetryError struct{}

func (safeToRetryError) Error() string     { return "conn busy" }
func (safeToRetryError) SafeToRetry() bool { return true }

func opError(op string, errno syscall.Errno) error {
	return &net.OpError{Op: op, Net: "tcp", Err: os.NewSyscallError(op, errno)}
}

func pgError(code string) error {
	return &pgconn.PgError{Severity: "ERROR", Code: code, Message: "message is never read"}
}

func apiError(status int, code jetstream.ErrorCode) error {
	return &jetstream.APIError{Code: status, ErrorCode: code, Description: "description is never read"}
}

func httpError(status int) error {
	return &classify.StatusError{StatusCode: status, Message: "message is never read"}
}

func TestClassify(t *testing.T) {
	t.Parallel()

	retry := func(class, code string) classify.Decision {
		return classify.Decision{Disposition: classify.Retry, Class: class, Code: code}
	}
	quarantine := func(class, code string) classify.Decision {
		return classify.Decision{Disposition: classify.Quarantine, Class: class, Code: code}
	}
	ambiguous := func(class, code string) classify.Decision {
		return classify.Decision{Disposition: classify.Ambiguous, Class: class, Code: code}
	}

	tests := []struct {
		name string
		err  error
		want classify.Decision
	}{
		// Retry: timeouts.
		{"net.Error timeout", timeoutError{}, retry(classify.ClassTimeout, "")},
		{"wrapped net.Error timeout", fmt.Errorf("read body: %w", &net.OpError{Op: "read", Net: "tcp", Err: timeoutError{}}), retry(classify.ClassTimeout, "")},
		{"url.Error timeout", &url.Error{Op: "Post", URL: "http://embedder/v1/embeddings", Err: timeoutError{}}, retry(classify.ClassTimeout, "")},
		{"context deadline", fmt.Errorf("embed batch: %w", context.DeadlineExceeded), retry(classify.ClassTimeout, "")},
		{"os deadline", os.ErrDeadlineExceeded, retry(classify.ClassTimeout, "")},

		// Retry: connection failures.
		{"connection reset", opError("read", syscall.ECONNRESET), retry(classify.ClassConnection, "")},
		{"connection refused", opError("dial", syscall.ECONNREFUSED), retry(classify.ClassConnection, "")},
		{"bare ECONNRESET", fmt.Errorf("write: %w", syscall.ECONNRESET), retry(classify.ClassConnection, "")},
		{"broken pipe", fmt.Errorf("write: %w", syscall.EPIPE), retry(classify.ClassConnection, "")},
		{"truncated body", fmt.Errorf("decode reply: %w", io.ErrUnexpectedEOF), retry(classify.ClassConnection, "")},
		{"closed conn", fmt.Errorf("read: %w", net.ErrClosed), retry(classify.ClassConnection, "")},
		{"server hung up", &url.Error{Op: "Post", URL: "http://embedder/v1/embeddings", Err: io.EOF}, retry(classify.ClassConnection, "")},
		{"dns failure", &net.DNSError{Err: "no such host", Name: "embedder", IsNotFound: true}, retry(classify.ClassConnection, "")},
		{"pg connect", &pgconn.ConnectError{Config: &pgconn.Config{}}, retry(classify.ClassConnection, "")},
		{"pg safe to retry", fmt.Errorf("upsert: %w", safeToRetryError{}), retry(classify.ClassDatabaseTransient, "")},

		// Retry: context canceled never parks.
		{"context canceled", fmt.Errorf("embed batch: %w", context.Canceled), retry(classify.ClassCanceled, "")},
		{"canceled inside url.Error", &url.Error{Op: "Post", URL: "http://embedder", Err: context.Canceled}, retry(classify.ClassCanceled, "")},

		// Retry: HTTP.
		{"408", httpError(408), retry(classify.ClassTimeout, "http_408")},
		{"425", httpError(425), retry(classify.ClassServerError, "http_425")},
		{"429", httpError(429), retry(classify.ClassRateLimited, "http_429")},
		{"500", httpError(500), retry(classify.ClassServerError, "http_500")},
		{"502", httpError(502), retry(classify.ClassServerError, "http_502")},
		{"503", httpError(503), retry(classify.ClassServerError, "http_503")},
		{"504", httpError(504), retry(classify.ClassServerError, "http_504")},
		{"529 overloaded", httpError(529), retry(classify.ClassServerError, "http_529")},

		// Retry: SQLSTATE.
		{"40001 serialization", pgError("40001"), retry(classify.ClassDatabaseTransient, "sqlstate_40001")},
		{"40P01 deadlock", pgError("40P01"), retry(classify.ClassDatabaseTransient, "sqlstate_40P01")},
		{"57P01 admin shutdown", pgError("57P01"), retry(classify.ClassDatabaseTransient, "sqlstate_57P01")},
		{"57P03 cannot connect now", pgError("57P03"), retry(classify.ClassDatabaseTransient, "sqlstate_57P03")},
		{"08006 connection failure", pgError("08006"), retry(classify.ClassDatabaseTransient, "sqlstate_08006")},
		{"53300 too many connections", pgError("53300"), retry(classify.ClassDatabaseTransient, "sqlstate_53300")},
		{"55P03 lock not available", pgError("55P03"), retry(classify.ClassDatabaseTransient, "sqlstate_55P03")},
		{"25006 read only after failover", pgError("25006"), retry(classify.ClassDatabaseTransient, "sqlstate_25006")},
		{"57014 statement timeout", pgError("57014"), retry(classify.ClassTimeout, "sqlstate_57014")},
		{"wrapped sqlstate", fmt.Errorf("store batch: %w", pgError("40001")), retry(classify.ClassDatabaseTransient, "sqlstate_40001")},

		// Retry: NATS and JetStream while a cluster settles or a server is
		// away.
		{"nats timeout", fmt.Errorf("inspect INGEST: %w", nats.ErrTimeout), retry(classify.ClassTimeout, "")},
		{"pub ack timeout", jetstream.ErrAsyncPublishTimeout, retry(classify.ClassTimeout, "")},
		{"no responders", fmt.Errorf("publish: %w", nats.ErrNoResponders), retry(classify.ClassBrokerUnavailable, "")},
		{"no stream response", jetstream.ErrNoStreamResponse, retry(classify.ClassBrokerUnavailable, "")},
		{"nats reconnecting", nats.ErrConnectionReconnecting, retry(classify.ClassBrokerUnavailable, "")},
		{"nats closed", nats.ErrConnectionClosed, retry(classify.ClassBrokerUnavailable, "")},
		{"10005 no peers", apiError(400, 10005), retry(classify.ClassBrokerUnavailable, "jetstream_10005")},
		{"10008 no meta leader", fmt.Errorf("inspect workers: %w", apiError(503, 10008)), retry(classify.ClassBrokerUnavailable, "jetstream_10008")},
		{"10009 not leader", apiError(500, 10009), retry(classify.ClassBrokerUnavailable, "jetstream_10009")},
		{"10077 stream full", apiError(503, 10077), retry(classify.ClassServerError, "jetstream_10077")},
		{"jetstream not enabled", jetstream.ErrJetStreamNotEnabled, retry(classify.ClassServerError, "jetstream_10076")},

		// Quarantine: HTTP.
		{"400", httpError(400), quarantine(classify.ClassBadRequest, "http_400")},
		{"401", httpError(401), quarantine(classify.ClassUnauthorized, "http_401")},
		{"403", httpError(403), quarantine(classify.ClassUnauthorized, "http_403")},
		{"404", httpError(404), quarantine(classify.ClassNotFound, "http_404")},
		{"409", httpError(409), quarantine(classify.ClassBadRequest, "http_409")},
		{"413", httpError(413), quarantine(classify.ClassPayloadTooLarge, "http_413")},
		{"422", httpError(422), quarantine(classify.ClassUnprocessable, "http_422")},
		{"400 context length", &classify.StatusError{StatusCode: 400, APICode: "context_length_exceeded"}, quarantine(classify.ClassContextLength, "http_400")},
		{"400 other api code", &classify.StatusError{StatusCode: 400, APICode: "invalid_request_error"}, quarantine(classify.ClassBadRequest, "http_400")},

		// Quarantine: the project's typed data errors.
		{"invalid encoding", classify.Permanentf(classify.ClassInvalidEncoding, "chunk %d: invalid UTF-8 after fallback", 3), quarantine(classify.ClassInvalidEncoding, "")},
		{"empty text", classify.Permanent(classify.ClassEmptyText, errors.New("nothing to embed")), quarantine(classify.ClassEmptyText, "")},
		{"dimension mismatch", classify.Permanentf(classify.ClassDimensionMismatch, "got %d dims, want %d", 768, 1536), quarantine(classify.ClassDimensionMismatch, "")},
		{"invalid vector", classify.Permanentf(classify.ClassInvalidVector, "NaN at %d", 7), quarantine(classify.ClassInvalidVector, "")},
		{"invalid message", fmt.Errorf("decode job: %w", classify.Permanentf(classify.ClassInvalidMessage, "missing doc_id")), quarantine(classify.ClassInvalidMessage, "")},

		// Quarantine: SQLSTATE.
		{"23514 check", pgError("23514"), quarantine(classify.ClassConstraint, "sqlstate_23514")},
		{"23502 not null", pgError("23502"), quarantine(classify.ClassConstraint, "sqlstate_23502")},
		{"22P02 invalid text", pgError("22P02"), quarantine(classify.ClassDatabasePermanent, "sqlstate_22P02")},
		{"22021 invalid byte sequence", pgError("22021"), quarantine(classify.ClassDatabasePermanent, "sqlstate_22021")},
		{"22001 string too long", pgError("22001"), quarantine(classify.ClassDatabasePermanent, "sqlstate_22001")},
		{"22000 pgvector dimension", pgError("22000"), quarantine(classify.ClassDatabasePermanent, "sqlstate_22000")},
		{"54000 row too big", pgError("54000"), quarantine(classify.ClassDatabasePermanent, "sqlstate_54000")},

		// Quarantine: NATS and JetStream refusals by their status.
		{"max payload", fmt.Errorf("publish: %w", nats.ErrMaxPayload), quarantine(classify.ClassPayloadTooLarge, "")},
		{"stream not found", fmt.Errorf("look up: %w", jetstream.ErrStreamNotFound), quarantine(classify.ClassNotFound, "jetstream_10059")},
		{"message not found", jetstream.ErrMsgNotFound, quarantine(classify.ClassNotFound, "jetstream_10037")},
		{"message too large", apiError(400, 10054), quarantine(classify.ClassBadRequest, "jetstream_10054")},

		// Ambiguous: not recognised, or the same for every chunk.
		{"unknown error", errors.New("something odd"), ambiguous(classify.ClassUnknown, "")},
		{"bare io.EOF", io.EOF, ambiguous(classify.ClassUnknown, "")},
		{"501", httpError(501), ambiguous(classify.ClassServerError, "http_501")},
		{"505", httpError(505), ambiguous(classify.ClassServerError, "http_505")},
		{"302", httpError(302), ambiguous(classify.ClassUnknown, "http_302")},
		{"42P01 undefined table", pgError("42P01"), ambiguous(classify.ClassDatabaseSetup, "sqlstate_42P01")},
		{"42703 undefined column", pgError("42703"), ambiguous(classify.ClassDatabaseSetup, "sqlstate_42703")},
		{"28P01 bad password", pgError("28P01"), ambiguous(classify.ClassDatabaseSetup, "sqlstate_28P01")},
		{"3D000 no database", pgError("3D000"), ambiguous(classify.ClassDatabaseSetup, "sqlstate_3D000")},
		{"23505 unique", pgError("23505"), ambiguous(classify.ClassConstraint, "sqlstate_23505")},
		{"23503 foreign key", pgError("23503"), ambiguous(classify.ClassConstraint, "sqlstate_23503")},
		{"unlisted sqlstate keeps its code", pgError("25P02"), ambiguous(classify.ClassUnknown, "sqlstate_25P02")},
		{"malformed sqlstate", pgError("4"), ambiguous(classify.ClassUnknown, "sqlstate_4")},
		{"typed error without disposition", &classify.Error{Class: classify.ClassInvalidVector}, ambiguous(classify.ClassInvalidVector, "")},
		{"typed error without class", &classify.Error{Disposition: classify.Quarantine}, quarantine(classify.ClassUnknown, "")},

		// Escalate.
		{"policy rule", classify.EscalateRule("pii.ssn", errors.New("matched")), classify.Decision{Disposition: classify.Escalate, Class: classify.ClassPolicyViolation, Code: "pii.ssn"}},
		{"wrapped policy rule", fmt.Errorf("validate chunk: %w", classify.EscalateRule("source.denied", nil)), classify.Decision{Disposition: classify.Escalate, Class: classify.ClassPolicyViolation, Code: "source.denied"}},

		// Bare sentinels.
		{"bare ErrPermanent", fmt.Errorf("parse: %w", classify.ErrPermanent), quarantine(classify.ClassUnknown, "")},
		{"bare ErrRetryable", fmt.Errorf("parse: %w", classify.ErrRetryable), retry(classify.ClassUnknown, "")},
		{"bare ErrEscalate", fmt.Errorf("parse: %w", classify.ErrEscalate), classify.Decision{Disposition: classify.Escalate, Class: classify.ClassPolicyViolation}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := classify.Classify(tt.err); got != tt.want {
				t.Errorf("Classify(%v) = %+v, want %+v", tt.err, got, tt.want)
			}
		})
	}
}

func TestClassifyNil(t *testing.T) {
	t.Parallel()
	if got := classify.Classify(nil); got != (classify.Decision{}) {
		t.Errorf("Classify(nil) = %+v, want the zero Decision", got)
	}
	if classify.IsRetryable(nil) || classify.IsDataError(nil) {
		t.Error("nil must be neither retryable nor a data error")
	}
}

// TestClassifySeedCases replays the routing guide's own test table: 503 and
// 429 retry, 404 quarantines, a validation error quarantines, a compliance
// error escalates, and an unknown error is ambiguous.
func TestClassifySeedCases(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		err  error
		want classify.Disposition
	}{
		{"503", httpError(503), classify.Retry},
		{"429", httpError(429), classify.Retry},
		{"404", httpError(404), classify.Quarantine},
		{"validation", classify.Permanentf(classify.ClassInvalidMessage, "missing parcel id"), classify.Quarantine},
		{"compliance", classify.EscalateRule("deadline.passed", errors.New("deadline passed")), classify.Escalate},
		{"unknown", errors.New("boom"), classify.Ambiguous},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := classify.Classify(tt.err).Disposition; got != tt.want {
				t.Errorf("Classify(%v).Disposition = %q, want %q", tt.err, got, tt.want)
			}
		})
	}
}

func TestClassifyTypedErrorWins(t *testing.T) {
	t.Parallel()
	// The embedder knows a 503 reply was for one bad input; its verdict must
	// beat the generic status rule, and the status still shows up as Code.
	err := fmt.Errorf("embed batch: %w", classify.Permanent(classify.ClassContextLength, httpError(503)))
	want := classify.Decision{Disposition: classify.Quarantine, Class: classify.ClassContextLength, Code: "http_503"}
	if got := classify.Classify(err); got != want {
		t.Errorf("Classify = %+v, want %+v", got, want)
	}

	// An explicit code is kept.
	err = &classify.Error{Disposition: classify.Quarantine, Class: classify.ClassInvalidVector, Code: "nan", Err: pgError("22000")}
	if got := classify.Classify(err).Code; got != "nan" {
		t.Errorf("Code = %q, want %q", got, "nan")
	}
}

func TestClassifyRetryAfter(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		err  error
		want time.Duration
	}{
		{"429 carries it", &classify.StatusError{StatusCode: 429, RetryAfter: 7 * time.Second}, 7 * time.Second},
		{"503 carries it", fmt.Errorf("embed: %w", &classify.StatusError{StatusCode: 503, RetryAfter: time.Minute}), time.Minute},
		{"400 drops it", &classify.StatusError{StatusCode: 400, RetryAfter: time.Minute}, 0},
		{"negative is zero", &classify.StatusError{StatusCode: 503, RetryAfter: -time.Second}, 0},
		{"RetryAfter constructor", classify.RetryAfter(3*time.Second, errors.New("slow down")), 3 * time.Second},
		{"typed error inherits it", classify.Retryable(classify.ClassServerError, &classify.StatusError{StatusCode: 503, RetryAfter: 9 * time.Second}), 9 * time.Second},
		{"typed error's own wins", classify.RetryAfter(2*time.Second, &classify.StatusError{StatusCode: 429, RetryAfter: 9 * time.Second}), 2 * time.Second},
		{"quarantine drops inherited", classify.Permanent(classify.ClassBadRequest, &classify.StatusError{StatusCode: 503, RetryAfter: 9 * time.Second}), 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := classify.Classify(tt.err).RetryAfter; got != tt.want {
				t.Errorf("RetryAfter = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestFromStatus(t *testing.T) {
	t.Parallel()
	tests := []struct {
		status  int
		apiCode string
		want    classify.Decision
	}{
		{429, "", classify.Decision{Disposition: classify.Retry, Class: classify.ClassRateLimited, Code: "http_429", RetryAfter: time.Second}},
		{413, "context_length_exceeded", classify.Decision{Disposition: classify.Quarantine, Class: classify.ClassContextLength, Code: "http_413"}},
		{503, "context_length_exceeded", classify.Decision{Disposition: classify.Retry, Class: classify.ClassServerError, Code: "http_503", RetryAfter: time.Second}},
		{501, "", classify.Decision{Disposition: classify.Ambiguous, Class: classify.ClassServerError, Code: "http_501", RetryAfter: time.Second}},
		{451, "", classify.Decision{Disposition: classify.Quarantine, Class: classify.ClassBadRequest, Code: "http_451"}},
		{0, "", classify.Decision{Disposition: classify.Ambiguous, Class: classify.ClassUnknown, Code: "http_0", RetryAfter: time.Second}},
	}
	for _, tt := range tests {
		if got := classify.FromStatus(tt.status, tt.apiCode, time.Second); got != tt.want {
			t.Errorf("FromStatus(%d, %q) = %+v, want %+v", tt.status, tt.apiCode, got, tt.want)
		}
	}
}

func TestPredicates(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		err       error
		retryable bool
		dataError bool
	}{
		{"503", httpError(503), true, false},
		{"timeout", context.DeadlineExceeded, true, false},
		{"canceled", context.Canceled, true, false},
		{"404", httpError(404), false, true},
		{"check violation", pgError("23514"), false, true},
		{"escalation", classify.EscalateRule("pii.email", nil), false, true},
		{"unknown", errors.New("boom"), false, false},
		{"missing table", pgError("42P01"), false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := classify.IsRetryable(tt.err); got != tt.retryable {
				t.Errorf("IsRetryable = %v, want %v", got, tt.retryable)
			}
			if got := classify.IsDataError(tt.err); got != tt.dataError {
				t.Errorf("IsDataError = %v, want %v", got, tt.dataError)
			}
		})
	}
}
