package broker_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/sluicehq/sluice/internal/dev/localenv"
	"github.com/sluicehq/sluice/internal/platform/broker"
)

// pullSetup declares the topology, publishes n chunk jobs and returns the
// workers durable.
func pullSetup(t *testing.T, n int) jetstream.Consumer {
	t.Helper()
	ctx := context.Background()
	js := setup(t)
	if err := broker.Ensure(ctx, js, broker.Topology{}); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if _, err := js.Publish(ctx, "ingest.chunks.pull", fmt.Appendf(nil, "job %d", i)); err != nil {
			t.Fatal(err)
		}
	}
	cons, err := broker.Lookup(ctx, js, broker.IngestStream, broker.WorkersConsumer, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	return cons
}

// received collects what a Pull handler was given.
type received struct {
	mu      sync.Mutex
	batches []int
	total   int
	first   time.Time
}

func (r *received) handle(_ context.Context, msgs []jetstream.Msg) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.total == 0 {
		r.first = time.Now()
	}
	r.batches = append(r.batches, len(msgs))
	r.total += len(msgs)
	for _, m := range msgs {
		_ = m.Ack()
	}
	return nil
}

func (r *received) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.total
}

// pull runs Pull until the handler has seen want messages, then stops it
// and checks that it returns promptly.
func pull(t *testing.T, cons jetstream.Consumer, opts broker.PullConfig, r *received, want int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		broker.Pull(ctx, cons, opts, r.handle)
	}()
	if !localenv.Poll(10*time.Second, func() bool { return r.count() >= want }) {
		cancel()
		t.Fatalf("handled %d of %d messages", r.count(), want)
	}
	cancel()
	select {
	case <-done:
	case <-time.After(opts.MaxWait + 5*time.Second):
		t.Fatal("Pull did not return after its context ended")
	}
}

func TestPullHandsBatchesOfAtMostTheAdmittedSize(t *testing.T) {
	t.Parallel()
	cons := pullSetup(t, 5)
	var r received
	var released atomic.Int32
	admit := func(context.Context) (int, func(), bool) { return 2, func() { released.Add(1) }, true }
	pull(t, cons, broker.PullConfig{BatchSize: 64, MaxWait: 200 * time.Millisecond, Admit: admit}, &r, 5)
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, n := range r.batches {
		if n > 2 {
			t.Fatalf("batches %v: want at most 2 messages each, as admitted", r.batches)
		}
	}
	if int(released.Load()) < len(r.batches) {
		t.Fatalf("released %d admissions for %d batches", released.Load(), len(r.batches))
	}
}

func TestPullEachHandsMessagesBeforeTheFetchEnds(t *testing.T) {
	t.Parallel()
	cons := pullSetup(t, 1)
	var r received
	const maxWait = 4 * time.Second
	start := time.Now()
	pull(t, cons, broker.PullConfig{BatchSize: 64, MaxWait: maxWait, Each: true}, &r, 1)
	if waited := r.first.Sub(start); waited >= maxWait/2 {
		t.Fatalf("first message handled after %s: Each must not wait for the fetch to end", waited)
	}
}

func TestLookupGivesUpWhenTheContextEnds(t *testing.T) {
	t.Parallel()
	js := setup(t)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err := broker.Lookup(ctx, js, broker.IngestStream, broker.WorkersConsumer, zerolog.Nop())
	if err == nil || ctx.Err() == nil {
		t.Fatalf("Lookup of a durable that does not exist = %v, want an error once the context ends", err)
	}
}

// Lookup waits for a durable that is not declared yet, but not for one
// JetStream can never give: classify calls an invalid name permanent, so
// Lookup says so at once instead of retrying it until the context ends.
func TestLookupReturnsAtOnceWhatCannotClear(t *testing.T) {
	t.Parallel()
	js := setup(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := time.Now()
	_, err := broker.Lookup(ctx, js, broker.IngestStream, "not.a.name", zerolog.Nop())
	if err == nil || ctx.Err() != nil {
		t.Fatalf("Lookup of an invalid durable name = %v after %s, want its error at once", err, time.Since(start))
	}
	if !errors.Is(err, jetstream.ErrInvalidConsumerName) {
		t.Errorf("Lookup = %v, want %v", err, jetstream.ErrInvalidConsumerName)
	}
}
