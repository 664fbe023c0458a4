package relay

import (
	"context"
	"io"
	"time"

	"github.com/sluicehq/sluice/internal/config"
	"github.com/sluicehq/sluice/internal/crashpoint"
	"github.com/sluicehq/sluice/internal/service"
	"github.com/sluicehq/sluice/pkg/outbox"
)

// Flags are the outbox-relay service's settings.
type Flags struct {
	Common config.Common
	Relay  outbox.RelayConfig
}

// Register registers the relay's settings on l.
func (f *Flags) Register(l *config.Loader) {
	config.RegisterCommon(l, &f.Common, "127.0.0.1:9102")
	l.Int(&f.Relay.BatchSize, "batch-size", "RELAY_BATCH_SIZE", 256, "outbox rows claimed per batch")
	l.Duration(&f.Relay.PollInterval, "poll-interval", "RELAY_POLL_INTERVAL", time.Second, "polling fallback when no notification arrives")
	l.Duration(&f.Relay.Retention, "retention", "OUTBOX_RETENTION", 7*24*time.Hour, "how long published outbox rows are kept")
}

// Run is the outbox-relay service: it runs until ctx ends.
func Run(ctx context.Context, args []string, lookup func(string) (string, bool), stderr io.Writer) error {
	l := config.NewLoader("outbox-relay", lookup)
	l.FlagSet().SetOutput(stderr)
	var f Flags
	f.Register(l)
	if _, err := l.Parse(args); err != nil {
		return service.UsageError(err)
	}
	common, cfg := f.Common, f.Relay
	rt, err := service.Start(ctx, "outbox-relay", common, service.Options{MaxConns: 4}, stderr)
	if err != nil {
		return err
	}
	defer rt.Close()
	relay := outbox.NewRelay(cfg, rt.Pool, rt.JS, rt.Log, rt.Registry, crashpoint.FromEnv(lookup))
	rt.Log.Info().Msg("outbox relay started")
	return relay.Run(ctx)
}
