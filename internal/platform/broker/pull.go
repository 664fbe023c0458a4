package broker

import (
	"context"
	"errors"
	"time"

	"github.com/failsafe-go/failsafe-go"
	"github.com/failsafe-go/failsafe-go/retrypolicy"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/sluicehq/sluice/internal/platform/wait"
	"github.com/sluicehq/sluice/pkg/classify"
)

// PullConfig tunes Pull.
type PullConfig struct {
	// BatchSize is how many messages one fetch asks for. Defaults to
	// DefaultPullBatch.
	BatchSize int
	// MaxWait bounds each fetch: no fetch waits longer for its batch, so
	// a silent connection never holds the loop. Defaults to
	// DefaultPullMaxWait.
	MaxWait time.Duration
	// Admit, when set, is called before each fetch. It blocks until work
	// may be pulled and says how many messages to fetch (0 for BatchSize);
	// ok false means "look again". release, when not nil, is called once
	// the batch is handled. Defaults to nil: always a full batch.
	Admit func(ctx context.Context) (size int, release func(), ok bool)
	// Each hands messages to the handler one at a time, as they arrive,
	// rather than the whole batch once the fetch ends. Defaults to false.
	Each bool
	// IdlePause, when positive, is a pause taken after every empty fetch
	// past the third in a row: a paused consumer answers fetches at once,
	// and the loop must not spin on it. Defaults to none.
	IdlePause time.Duration
	// ErrorPause is the pause after a failed fetch or a batch whose
	// handler failed. Defaults to DefaultPullErrorPause.
	ErrorPause time.Duration
	// Log receives fetch failures. Defaults to the zero logger.
	Log zerolog.Logger
}

// Defaults of PullConfig.
const (
	DefaultPullBatch      = 64
	DefaultPullMaxWait    = time.Second
	DefaultPullErrorPause = time.Second
)

// idleFetches is how many empty fetches in a row Pull takes before it
// pauses for PullConfig.IdlePause.
const idleFetches = 3

func (o *PullConfig) applyDefaults() {
	if o.BatchSize == 0 {
		o.BatchSize = DefaultPullBatch
	}
	if o.MaxWait == 0 {
		o.MaxWait = DefaultPullMaxWait
	}
	if o.ErrorPause == 0 {
		o.ErrorPause = DefaultPullErrorPause
	}
}

// Handler processes fetched messages and settles each of them. An error
// means the batch was not committed: Pull pauses before the next fetch.
type Handler func(ctx context.Context, msgs []jetstream.Msg) error

// Pull fetches batches from cons and hands them to handle until ctx ends.
// Each fetch asks for an explicit batch and waits at most MaxWait, so the
// loop notices ctx ending and a lost connection within that bound. Pull
// returns once the batch in hand is handled; the handler decides how long
// in-flight work may outlive ctx.
func Pull(ctx context.Context, cons jetstream.Consumer, opts PullConfig, handle Handler) {
	opts.applyDefaults()
	idle := 0
	for ctx.Err() == nil {
		size, release, ok := opts.BatchSize, func() {}, true
		if opts.Admit != nil {
			var r func()
			if size, r, ok = opts.Admit(ctx); !ok {
				continue
			}
			if r != nil {
				release = r
			}
			if size == 0 {
				size = opts.BatchSize
			}
		}
		n, err := fetch(ctx, cons, size, opts, handle)
		release()
		switch {
		case err != nil:
			wait.Sleep(ctx, opts.ErrorPause, nil)
		case n > 0:
			idle = 0
		default:
			if idle++; idle > idleFetches {
				wait.Sleep(ctx, opts.IdlePause, nil)
			}
		}
	}
}

// fetch runs one fetch and hands what it brings to handle; it returns how
// many messages it got.
func fetch(ctx context.Context, cons jetstream.Consumer, size int, opts PullConfig, handle Handler) (int, error) {
	batch, err := cons.Fetch(size, jetstream.FetchMaxWait(opts.MaxWait))
	if err != nil {
		if ctx.Err() == nil {
			opts.Log.Warn().Err(err).Msg("fetch failed")
		}
		return 0, err
	}
	var msgs []jetstream.Msg
	var errs []error
	for msg := range batch.Messages() {
		if opts.Each {
			errs = append(errs, handle(ctx, []jetstream.Msg{msg}))
		}
		msgs = append(msgs, msg)
	}
	if err := batch.Error(); err != nil && !errors.Is(err, nats.ErrTimeout) && ctx.Err() == nil {
		opts.Log.Debug().Err(err).Msg("fetch ended")
	}
	if len(msgs) > 0 && !opts.Each {
		errs = append(errs, handle(ctx, msgs))
	}
	return len(msgs), errors.Join(errs...)
}

// Lookup returns the durable consumer of stream, trying again every
// second, saying so, until it exists or ctx ends: services may start
// before the topology owner declares it, or while the broker is away
// (see lookupAgain). Any other failure, such as a name JetStream cannot
// take, is returned at once.
func Lookup(ctx context.Context, js jetstream.JetStream, stream, durable string, log zerolog.Logger) (jetstream.Consumer, error) {
	policy := retrypolicy.NewBuilder[jetstream.Consumer]().
		HandleIf(func(_ jetstream.Consumer, err error) bool { return lookupAgain(err) }).
		WithMaxRetries(-1).
		WithDelay(lookupDelay).
		AbortIf(func(jetstream.Consumer, error) bool { return ctx.Err() != nil }).
		OnRetryScheduled(func(e failsafe.ExecutionScheduledEvent[jetstream.Consumer]) {
			log.Warn().Err(e.LastError()).Str("stream", stream).Str("durable", durable).Msg("consumer not available yet")
		}).
		Build()
	return failsafe.With(policy).WithContext(ctx).Get(func() (jetstream.Consumer, error) {
		return js.Consumer(ctx, stream, durable)
	})
}

// lookupAgain reports whether Lookup asks again after err: when the
// stream or the durable is not declared yet, or classify calls the
// failure transient.
func lookupAgain(err error) bool {
	return errors.Is(err, jetstream.ErrStreamNotFound) || errors.Is(err, jetstream.ErrConsumerNotFound) ||
		classify.IsRetryable(err)
}

// lookupDelay spaces Lookup's attempts.
const lookupDelay = time.Second
