package publish_test

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/sluicehq/sluice/internal/ingest/publish"
)

// A sweep stops at the first publish the broker could not answer, leaving
// the rest owed for the next sweep, and goes on past a refusal the broker
// sent. pkg/classify decides which is which, so a JetStream cluster
// without leaders counts as unavailable although it answered with an API
// error, and a full stream counts as a refusal.
func TestUnavailable(t *testing.T) {
	t.Parallel()
	api := func(status int, code jetstream.ErrorCode) error {
		return &jetstream.APIError{Code: status, ErrorCode: code, Description: "never read"}
	}
	for _, c := range []struct {
		name string
		err  error
		want bool
	}{
		{"pub ack timeout", jetstream.ErrAsyncPublishTimeout, true},
		{"deadline", fmt.Errorf("publish: %w", context.DeadlineExceeded), true},
		{"no responders", nats.ErrNoResponders, true},
		{"reconnecting", nats.ErrConnectionReconnecting, true},
		{"connection refused", fmt.Errorf("dial: %w", syscall.ECONNREFUSED), true},
		{"no meta leader", api(503, 10008), true},
		{"not leader", api(500, 10009), true},
		{"unrecognised", errors.New("odd"), true},
		{"stream full", api(503, 10077), false},
		{"message too large", api(400, 10054), false},
		{"over max payload", nats.ErrMaxPayload, false},
		{"stream gone", jetstream.ErrStreamNotFound, false},
		{"none", nil, false},
	} {
		if got := publish.Unavailable(c.err); got != c.want {
			t.Errorf("%s: Unavailable(%v) = %v, want %v", c.name, c.err, got, c.want)
		}
	}
}
