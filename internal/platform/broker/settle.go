package broker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/failsafe-go/failsafe-go"
	"github.com/failsafe-go/failsafe-go/retrypolicy"

	"github.com/sluicehq/sluice/pkg/classify"
)

// Defaults of SettleConfig, read by the CLI's flags too.
const (
	// DefaultSettleAttempt is SettleConfig.Attempt's default.
	DefaultSettleAttempt = 10 * time.Second
	// DefaultSettlePatience is SettleConfig.Patience's default: a cluster
	// whose node was just restarted elects its leaders well within it.
	DefaultSettlePatience = 30 * time.Second
)

// Spacing of Settle's attempts: capped exponential backoff.
const (
	settleDelay    = 200 * time.Millisecond
	settleMaxDelay = 2 * time.Second
)

// ErrUnsettled is returned by Settle when the broker kept giving the
// answers of a settling cluster for the whole of SettleConfig.Patience.
var ErrUnsettled = errors.New("jetstream did not settle")

// SettleConfig bounds Settle.
type SettleConfig struct {
	// Attempt bounds each request: a request sent while no node leads
	// its stream or consumer may never be answered. Defaults to
	// DefaultSettleAttempt.
	Attempt time.Duration
	// Patience bounds the whole wait, attempts and the pauses between
	// them. Defaults to DefaultSettlePatience.
	Patience time.Duration
}

func (c *SettleConfig) applyDefaults() {
	if c.Patience <= 0 {
		c.Patience = DefaultSettlePatience
	}
	if c.Attempt <= 0 {
		c.Attempt = DefaultSettleAttempt
	}
	c.Attempt = min(c.Attempt, c.Patience)
}

// Settle runs fn, a JetStream request that is safe to repeat, in attempts
// of at most cfg.Attempt each, asking again for as long as the error is
// one classify calls transient (a JetStream cluster electing its leaders
// answers no request in time, or says it is unavailable or not the
// leader; a server restarting has no responder), for up to cfg.Patience.
// Any other answer, such as a missing stream, a permissions violation or
// an invalid setting, ends it at once with that error. A wait that runs
// out returns an error matching ErrUnsettled and wrapping the last
// failure; one ended by ctx returns ctx's error.
func Settle(ctx context.Context, cfg SettleConfig, fn func(context.Context) error) error {
	cfg.applyDefaults()
	bounded, cancel := context.WithTimeout(ctx, cfg.Patience)
	defer cancel()
	policy := retrypolicy.NewBuilder[any]().
		HandleIf(func(_ any, err error) bool { return classify.IsRetryable(err) }).
		WithMaxRetries(-1).
		WithBackoff(settleDelay, settleMaxDelay).
		AbortIf(func(any, error) bool { return bounded.Err() != nil }).
		ReturnLastFailure().
		Build()
	var last error
	err := failsafe.With(policy).WithContext(bounded).Run(func() error {
		attempt, cancel := context.WithTimeout(bounded, cfg.Attempt)
		defer cancel()
		last = fn(attempt)
		return last
	})
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil && !errors.Is(err, ctx.Err()):
		return fmt.Errorf("%w: %w", ctx.Err(), err)
	case ctx.Err() != nil:
		return err
	case bounded.Err() != nil && last != nil && classify.IsRetryable(last):
		// The bound may end a pause between attempts: the last answer
		// says more than the bound's own deadline.
		return fmt.Errorf("%w within %s: %w", ErrUnsettled, cfg.Patience, last)
	}
	return err
}
