package dlq

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/sluicehq/sluice/internal/failure/quality"
	"github.com/sluicehq/sluice/internal/failure/retention"
	"github.com/sluicehq/sluice/internal/ingest"
	"github.com/sluicehq/sluice/internal/platform/broker"
	"github.com/sluicehq/sluice/internal/platform/config"
	"github.com/sluicehq/sluice/internal/platform/policy"
	"github.com/sluicehq/sluice/internal/platform/service"
	"github.com/sluicehq/sluice/internal/store/runs"
)

// ServiceConfig is the dlq-replayer service's configuration.
type ServiceConfig struct {
	ingest.Config
	// Roles are the DLQ consumers this process runs, comma-separated:
	// triage, replayer, alerter. Defaults to DefaultRoles, all three.
	Roles string
	// WebhookURL receives the alerter's events. Defaults to none: log
	// only.
	WebhookURL string
	// SpikeThreshold is the alerter's spike threshold. Defaults to
	// DefaultSpikeThreshold.
	SpikeThreshold int
	// SpikeWindow is the alerter's spike window. Defaults to
	// DefaultSpikeWindow.
	SpikeWindow time.Duration
	// Housekeeping spaces run refreshes. Defaults to DefaultHousekeeping.
	// Retention runs every retention.DefaultInterval where triage runs.
	Housekeeping time.Duration
	// Quality is where the per-source quality report goes, and how
	// often. It is sent where triage runs. Defaults to nowhere, daily.
	Quality quality.Config
}

// Defaults of ServiceConfig.
const (
	DefaultRoles        = broker.TriageConsumer + "," + broker.ReplayerConsumer + "," + broker.AlerterConsumer
	DefaultHousekeeping = 5 * time.Second
)

// Register registers the service's settings on l.
func (c *ServiceConfig) Register(l *config.Loader) {
	c.Config.Register(l, "127.0.0.1:9103")
	l.String(&c.Roles, "roles", "DLQ_ROLES", DefaultRoles, "DLQ consumers to run in this process")
	l.String(&c.WebhookURL, "alert-webhook-url", "ALERT_WEBHOOK_URL", "", "where escalations and spike alerts are POSTed (empty: log only)")
	l.Int(&c.SpikeThreshold, "spike-threshold", "SPIKE_THRESHOLD", DefaultSpikeThreshold, "dead letters within the spike window that raise an alert (negative disables)")
	l.Duration(&c.SpikeWindow, "spike-window", "SPIKE_WINDOW", DefaultSpikeWindow, "window of the spike detector")
	l.Duration(&c.PayloadRetention, "payload-retention", "DLQ_PAYLOAD_RETENTION", policy.DefaultPayloadRetention, "age after which dead-letter payloads, their by-reference copies and parked chunks' job bytes are purged (counts and classes stay); escalations follow ESCALATION_RETENTION")
	l.Duration(&c.EscalationRetention, "escalation-retention", "ESCALATION_RETENTION", policy.DefaultEscalationRetention, "age after which an escalation's payload, history and secret text are purged; never below RETENTION_MANDATE")
	l.Duration(&c.RetentionMandate, "retention-mandate", "RETENTION_MANDATE", policy.DefaultRetentionMandate, "legal floor for keeping compliance records: escalations are never purged sooner")
	l.Duration(&c.Housekeeping, "housekeeping-interval", "HOUSEKEEPING_INTERVAL", DefaultHousekeeping, "how often run statuses are refreshed")
	l.Duration(&c.Quality.Interval, "quality-report-interval", "QUALITY_REPORT_INTERVAL", quality.DefaultInterval, "how often the per-source quality report covering the interval just ended is sent")
	l.String(&c.Quality.Dir, "quality-report-dir", "QUALITY_REPORT_DIR", "", "directory that receives each quality report as quality-<end>.json (empty: none)")
	l.String(&c.Quality.URL, "quality-report-url", "QUALITY_REPORT_URL", "", "webhook that receives each quality report as a JSON POST (empty: none)")
}

// Validate says what is wrong with the service's own settings and how to
// fix them; the pipeline settings are checked when the replayer's
// pipeline is built, the common ones by service.Start.
func (c *ServiceConfig) Validate() error {
	var errs []error
	if _, err := parseRoles(c.Roles); err != nil {
		errs = append(errs, err)
	}
	if c.SpikeWindow < 0 {
		errs = append(errs, fmt.Errorf("SPIKE_WINDOW %s: use a positive duration such as 5m", c.SpikeWindow))
	}
	if c.Housekeeping <= 0 {
		errs = append(errs, fmt.Errorf("HOUSEKEEPING_INTERVAL %s: use a positive duration such as 5s", c.Housekeeping))
	}
	if err := c.Quality.Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Run is the dlq-replayer service: it runs until ctx ends.
func Run(ctx context.Context, args []string, lookup func(string) (string, bool), stderr io.Writer) error {
	var cfg ServiceConfig
	if _, err := service.Load("dlq-replayer", args, lookup, stderr, &cfg); err != nil {
		return err
	}
	roles, _ := parseRoles(cfg.Roles)
	rt, err := service.Start(ctx, "dlq-replayer", cfg.Common, service.StartConfig{MaxConns: 8}, stderr)
	if err != nil {
		return err
	}
	defer rt.Close()

	handlers, triage, leave, err := cfg.handlers(ctx, rt, roles, lookup)
	if err != nil {
		return err
	}
	// Runs before rt.Close (deferred earlier), once every handler has
	// returned: the replayer holds its share of the fleet budget until
	// its last replay is done.
	defer leave()
	var wg sync.WaitGroup
	for durable, h := range handlers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := Consume(ctx, rt.JS, durable, rt.Log, WithPayloads(rt.Pool, h)); err != nil {
				rt.Log.Error().Err(err).Str("durable", durable).Msg("DLQ consumer stopped")
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		housekeeping(ctx, rt, cfg)
	}()
	if triage != nil {
		// Retention runs where triage does: triage owns the dead letters
		// and holds the policy their retention follows.
		purger := retention.New(retention.Config{}, retention.Deps{Log: rt.Log, Registry: rt.Registry}, triage.RetentionSteps()...)
		wg.Go(func() { purger.Run(ctx) })
		// So does the quality report: a trickle of failures below the
		// spike threshold goes there, not to an alert.
		if cfg.Quality.Enabled() {
			reporter := quality.New(cfg.Quality, quality.Deps{DB: rt.Pool, Log: rt.Log, Registry: rt.Registry})
			wg.Go(func() { reporter.Run(ctx) })
		}
	}
	rt.Started()
	rt.Log.Info().Str("roles", cfg.Roles).Msg("dlq-replayer started")
	wg.Wait()
	rt.Log.Info().Msg("dlq-replayer stopped")
	return nil
}

// handlers builds the handler of each role, and returns triage's too
// (nil unless it runs) and the replayer's leave from the fleet budget (a
// no-op unless it runs).
func (c *ServiceConfig) handlers(ctx context.Context, rt *service.Runtime, roles map[string]bool, lookup func(string) (string, bool)) (map[string]Handler, *Triage, func(), error) {
	handlers, leave := map[string]Handler{}, func() {}
	var triage *Triage
	if roles[broker.TriageConsumer] {
		table, err := c.Policy()
		if err != nil {
			return nil, nil, nil, service.UsageError(err)
		}
		opts := TriageConfig{Policy: table}
		if err := opts.Validate(); err != nil {
			return nil, nil, nil, service.UsageError(err)
		}
		triage = NewTriage(opts, TriageDeps{Pool: rt.Pool, Log: rt.Log, Registry: rt.Registry})
		handlers[broker.TriageConsumer] = triage.Handle
	}
	if roles[broker.AlerterConsumer] {
		a, err := NewAlerter(AlerterConfig{WebhookURL: c.WebhookURL, SpikeThreshold: c.SpikeThreshold, SpikeWindow: c.SpikeWindow}, rt.Log, rt.Registry)
		if err != nil {
			return nil, nil, nil, err
		}
		handlers[broker.AlerterConsumer] = a.Handle
	}
	if roles[broker.ReplayerConsumer] {
		pipe, _, left, err := c.Build(ctx, rt, lookup)
		if err != nil {
			return nil, nil, nil, err
		}
		leave = left
		handlers[broker.ReplayerConsumer] = NewReplayer(pipe, c.MaxDeliveries, rt.Log, rt.Registry, nil).Handle
	}
	return handlers, triage, leave, nil
}

// housekeeping refreshes run statuses every Housekeeping interval.
func housekeeping(ctx context.Context, rt *service.Runtime, cfg ServiceConfig) {
	t := time.NewTicker(cfg.Housekeeping)
	defer t.Stop()
	for {
		if err := runs.Refresh(ctx, rt.Pool); err != nil && ctx.Err() == nil {
			rt.Log.Warn().Err(err).Msg("refresh runs")
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func parseRoles(s string) (map[string]bool, error) {
	roles := map[string]bool{}
	for _, r := range strings.Split(s, ",") {
		switch r = strings.TrimSpace(r); r {
		case broker.TriageConsumer, broker.ReplayerConsumer, broker.AlerterConsumer:
			roles[r] = true
		case "":
		default:
			return nil, fmt.Errorf("--roles: unknown role %q: use triage, replayer, alerter", r)
		}
	}
	if len(roles) == 0 {
		return nil, fmt.Errorf("--roles is empty: name at least one of triage, replayer, alerter")
	}
	return roles, nil
}
