package classify_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/sluicehq/sluice/pkg/classify"
)

func TestErrorMatchesItsSentinel(t *testing.T) {
	t.Parallel()
	cause := errors.New("cause")
	tests := []struct {
		name string
		err  error
		want error
	}{
		{"Permanent", classify.Permanent(classify.ClassEmptyText, cause), classify.ErrPermanent},
		{"Permanentf", classify.Permanentf(classify.ClassInvalidEncoding, "chunk %d: %w", 2, cause), classify.ErrPermanent},
		{"Retryable", classify.Retryable(classify.ClassServerError, cause), classify.ErrRetryable},
		{"RetryAfter", classify.RetryAfter(time.Second, cause), classify.ErrRetryable},
		{"EscalateRule", classify.EscalateRule("pii.ssn", cause), classify.ErrEscalate},
	}
	sentinels := []error{classify.ErrRetryable, classify.ErrPermanent, classify.ErrEscalate}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			wrapped := fmt.Errorf("embed batch: %w", tt.err)
			for _, s := range sentinels {
				if got := errors.Is(wrapped, s); got != (s == tt.want) {
					t.Errorf("errors.Is(%v, %v) = %v", wrapped, s, got)
				}
			}
			if !errors.Is(wrapped, cause) {
				t.Errorf("errors.Is(%v, cause) = false; Unwrap must reach the cause", wrapped)
			}
			e, ok := errors.AsType[*classify.Error](wrapped)
			if !ok {
				t.Fatalf("errors.As(%v, *classify.Error) = false", wrapped)
			}
			if errors.Unwrap(e) == nil {
				t.Error("Unwrap() = nil, want the cause")
			}
		})
	}
}

func TestAmbiguousErrorMatchesNoSentinel(t *testing.T) {
	t.Parallel()
	err := &classify.Error{Disposition: classify.Ambiguous, Class: classify.ClassUnknown}
	for _, s := range []error{classify.ErrRetryable, classify.ErrPermanent, classify.ErrEscalate} {
		if errors.Is(err, s) {
			t.Errorf("errors.Is(ambiguous, %v) = true", s)
		}
	}
}

func TestErrorAsReachesWrappedCauses(t *testing.T) {
	t.Parallel()
	status := &classify.StatusError{StatusCode: 400, APICode: "context_length_exceeded", Message: "too long"}
	err := fmt.Errorf("embed batch: %w", classify.Permanent(classify.ClassContextLength, status))

	e, ok := errors.AsType[*classify.Error](err)
	if !ok || e.Class != classify.ClassContextLength {
		t.Fatalf("errors.As *Error = %v, %v", e, ok)
	}
	se, ok := errors.AsType[*classify.StatusError](err)
	if !ok || se != status {
		t.Fatalf("errors.As *StatusError = %v, %v; want the wrapped reply", se, ok)
	}
}

func TestErrorMessages(t *testing.T) {
	t.Parallel()
	tests := []struct {
		err  error
		want string
	}{
		{classify.Permanentf(classify.ClassEmptyText, "chunk %d", 4), "quarantine empty_text: chunk 4"},
		{classify.EscalateRule("pii.ssn", errors.New("matched")), "escalate policy_violation (pii.ssn): matched"},
		{classify.EscalateRule("source.denied", nil), "escalate policy_violation (source.denied)"},
		{&classify.StatusError{StatusCode: 429, APICode: "rate_limit_exceeded", Message: "slow down"}, "http 429 rate_limit_exceeded: slow down"},
		{&classify.StatusError{StatusCode: 503}, "http 503"},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
	}
}
