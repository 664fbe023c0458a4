package outboxrelay

import (
	"context"
	"errors"
	"io"

	"github.com/sluicehq/sluice/internal/platform/config"
	"golang.org/x/sync/errgroup"

	"github.com/sluicehq/sluice/internal/ingest/publish"
	"github.com/sluicehq/sluice/internal/platform/crashpoint"
	"github.com/sluicehq/sluice/internal/platform/service"
	"github.com/sluicehq/sluice/pkg/outbox"
)

// ServiceConfig are the outbox-relay service's settings.
type ServiceConfig struct {
	Common config.Common
	Relay  outbox.RelayConfig
	Owed   publish.SweeperConfig
}

// Register registers the relay's settings on l.
func (f *ServiceConfig) Register(l *config.Loader) {
	config.RegisterCommon(l, &f.Common, "127.0.0.1:9102")
	l.Int(&f.Relay.BatchSize, "batch-size", "RELAY_BATCH_SIZE", outbox.DefaultRelayBatchSize, "outbox rows claimed per batch")
	l.Duration(&f.Relay.PollInterval, "poll-interval", "RELAY_POLL_INTERVAL", outbox.DefaultPollInterval, "polling fallback when no notification arrives")
	l.Duration(&f.Relay.Retention, "retention", "OUTBOX_RETENTION", outbox.DefaultRetention, "how long published outbox rows are kept")
	l.Duration(&f.Owed.Grace, "owed-grace", "OWED_GRACE", publish.DefaultGrace, "how long a recorded chunk job may wait for its producer's publish before the relay publishes it")
	l.Duration(&f.Owed.Interval, "owed-interval", "OWED_INTERVAL", publish.DefaultSweepInterval, "how often the relay looks for owed chunk jobs")
}

// Validate says what is wrong with the relay's and the sweeper's
// settings and how to fix them; service.Start checks Common.
func (f ServiceConfig) Validate() error {
	return errors.Join(f.Relay.Validate(), f.Owed.Validate())
}

// Run is the outbox-relay service: the relay of dead letters and the
// sweeper of owed chunk jobs, until ctx ends.
func Run(ctx context.Context, args []string, lookup func(string) (string, bool), stderr io.Writer) error {
	var f ServiceConfig
	if _, err := service.Load("outbox-relay", args, lookup, stderr, &f); err != nil {
		return err
	}
	common, cfg := f.Common, f.Relay
	rt, err := service.Start(ctx, "outbox-relay", common, service.StartConfig{MaxConns: 4}, stderr)
	if err != nil {
		return err
	}
	defer rt.Close()
	relay := outbox.NewRelay(cfg, outbox.RelayDeps{Pool: rt.Pool, JS: rt.JS, Log: rt.Log, Registry: rt.Registry, Crash: crashpoint.FromEnv(lookup)})
	sweeper, err := publish.NewSweeper(f.Owed, publish.SweeperDeps{Pool: rt.Pool, JS: rt.JS, Log: rt.Log, Registry: rt.Registry})
	if err != nil {
		return service.UsageError(err)
	}
	rt.Started()
	rt.Log.Info().Msg("outbox relay started")
	// A relay stopped by a permanent failure stops the sweeper too, so
	// that the service exits and says why rather than half running.
	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() error { return relay.Run(ctx) })
	g.Go(func() error { return sweeper.Run(ctx) })
	return g.Wait()
}
