package broker_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/sluicehq/sluice/internal/platform/broker"
)

// A settling cluster's answers, as nats-server gives them while its meta
// group or a stream has no leader.
var (
	noMetaLeader = &jetstream.APIError{Code: 503, ErrorCode: 10008, Description: "JetStream system temporarily unavailable"}
	notLeader    = &jetstream.APIError{Code: 500, ErrorCode: 10009, Description: "JetStream cluster can not handle request"}
)

// A read that fails the way a cluster electing its leaders fails is asked
// again, within the bound, until it is answered; classify decides which
// failures those are, so an answer such as a missing stream ends the wait
// at once.
func TestSettle(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		failures  []error // answers before success
		forever   error   // answer of every attempt, when set
		wantCalls int
		wantErr   error
	}{
		{name: "no meta leader, then an answer", failures: []error{noMetaLeader, fmt.Errorf("inspect workers: %w", context.DeadlineExceeded), notLeader}, wantCalls: 4},
		{name: "stream not found", forever: jetstream.ErrStreamNotFound, wantCalls: 1, wantErr: jetstream.ErrStreamNotFound},
		{name: "unknown error", forever: errors.New("odd"), wantCalls: 1},
		{name: "never settles", forever: noMetaLeader, wantErr: broker.ErrUnsettled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			calls := 0
			cfg := broker.SettleConfig{Attempt: 100 * time.Millisecond, Patience: 2 * time.Second}
			start := time.Now()
			err := broker.Settle(context.Background(), cfg, func(ctx context.Context) error {
				calls++
				if _, ok := ctx.Deadline(); !ok {
					t.Error("an attempt without a deadline")
				}
				if tt.forever != nil {
					return tt.forever
				}
				if calls <= len(tt.failures) {
					return tt.failures[calls-1]
				}
				return nil
			})
			elapsed := time.Since(start)
			switch {
			case tt.wantErr != nil && !errors.Is(err, tt.wantErr):
				t.Fatalf("Settle = %v, want %v", err, tt.wantErr)
			case tt.wantErr == nil && tt.forever == nil && err != nil:
				t.Fatalf("Settle = %v, want success once the cluster answers", err)
			case tt.forever != nil && err == nil:
				t.Fatal("Settle succeeded on a request that never did")
			}
			if tt.wantCalls > 0 && calls != tt.wantCalls {
				t.Errorf("%d attempts, want %d", calls, tt.wantCalls)
			}
			if errors.Is(tt.wantErr, broker.ErrUnsettled) {
				if calls < 2 || !errors.Is(err, noMetaLeader) {
					t.Errorf("gave up after %d attempts with %v: want several, wrapping the last answer", calls, err)
				}
				if elapsed < cfg.Patience || elapsed > cfg.Patience+time.Second {
					t.Errorf("gave up after %s, want about the patience of %s", elapsed, cfg.Patience)
				}
			}
		})
	}
}
