package outbox

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/nats-io/nats.go"
)

// The relay's loop retries what pkg/classify calls transient or
// ambiguous and stops on what it calls permanent; refused rows back off
// on their own and are not the loop's to retry.
func TestRelayAgain(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		err  error
		want bool
	}{
		{"connection refused", fmt.Errorf("begin: %w", syscall.ECONNREFUSED), true},
		{"serialization failure", fmt.Errorf("mark published: %w", &pgconn.PgError{Code: "40001"}), true},
		{"admin shutdown", fmt.Errorf("claim: %w", &pgconn.PgError{Code: "57P01"}), true},
		{"statement timeout", fmt.Errorf("claim: %w", context.DeadlineExceeded), true},
		{"nats away", fmt.Errorf("publish: %w", nats.ErrConnectionReconnecting), true},
		{"missing migration", fmt.Errorf("claim: %w", &pgconn.PgError{Code: "42P01"}), true},
		{"unrecognised", errors.New("odd"), true},
		{"data exception", fmt.Errorf("claim: %w", &pgconn.PgError{Code: "2201W"}), false},
		{"check violation", fmt.Errorf("mark failed: %w", &pgconn.PgError{Code: "23514"}), false},
		{"refused rows", fmt.Errorf("%w: 1 of 3 rows: %w", ErrPublish, nats.ErrTimeout), false},
		{"success", nil, false},
	} {
		if got := relayAgain(c.err); got != c.want {
			t.Errorf("%s: relayAgain(%v) = %v, want %v", c.name, c.err, got, c.want)
		}
	}
}
