package service

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/sluicehq/sluice/internal/broker"
	"github.com/sluicehq/sluice/internal/config"
	"github.com/sluicehq/sluice/internal/telemetry"
)

// Runtime is a started service's shared plumbing.
type Runtime struct {
	Log      zerolog.Logger
	Registry *prometheus.Registry
	Pool     *pgxpool.Pool
	NC       *nats.Conn
	JS       jetstream.JetStream
	Health   *telemetry.Server

	waitHTTP func() error
	stopHTTP context.CancelFunc
}

// Options adjust Start.
type Options struct {
	// MaxConns sizes the PostgreSQL pool. Defaults to pgx's default.
	MaxConns int32
	// NoNATS skips the NATS connection, for services that do not use it.
	NoNATS bool
	// NATSOptional lets the service start while NATS is unreachable, after
	// one short try to verify the topology: the producer then records its
	// run, and what it cannot publish stays owed for the outbox-relay.
	NATSOptional bool
}

// Start builds a service's runtime. Close releases it.
func Start(ctx context.Context, name string, c config.Common, opts Options, stderr io.Writer) (*Runtime, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	log, err := telemetry.NewLogger(stderr, name, c.LogLevel, c.LogFormat)
	if err != nil {
		return nil, err
	}
	rt := &Runtime{Log: log, Registry: telemetry.NewRegistry(), waitHTTP: func() error { return nil }, stopHTTP: func() {}}
	pcfg, err := pgxpool.ParseConfig(c.DatabaseURL)
	if err != nil {
		return nil, fmt.Errorf("DATABASE_URL: %w", err)
	}
	if opts.MaxConns > 0 {
		pcfg.MaxConns = opts.MaxConns
	}
	pcfg.ConnConfig.RuntimeParams["application_name"] = "sluice-" + name
	boundSQL(pcfg, c.SQLTimeout)
	if rt.Pool, err = pgxpool.NewWithConfig(ctx, pcfg); err != nil {
		return nil, fmt.Errorf("connect to postgres %s: %w", config.Redact(c.DatabaseURL), err)
	}
	if err := waitFor(ctx, log, "postgres", func(ctx context.Context) error { return rt.Pool.Ping(ctx) }); err != nil {
		rt.Close()
		return nil, fmt.Errorf("postgres %s: %w", config.Redact(c.DatabaseURL), err)
	}
	checks := []telemetry.Check{{Name: "postgres", Fn: func(ctx context.Context) error { return rt.Pool.Ping(ctx) }}}
	if !opts.NoNATS {
		rt.NC, rt.JS, err = broker.Connect(c.NATSConn("sluice-"+name), log)
		if err != nil {
			rt.Close()
			return nil, err
		}
		// The topology owner declares the streams (sluice nats setup); a
		// service only checks them, waiting as for any dependency.
		verify := func(ctx context.Context) error { return broker.Verify(ctx, rt.JS) }
		if opts.NATSOptional {
			attempt, cancel := context.WithTimeout(ctx, natsOptionalWait)
			if err := verify(attempt); err != nil {
				log.Warn().Err(err).Msg("NATS unreachable at startup; going on without it")
			}
			cancel()
		} else if err := waitFor(ctx, log, "nats", verify); err != nil {
			rt.Close()
			return nil, fmt.Errorf("verify jetstream topology: %w", err)
		}
		checks = append(checks, telemetry.Check{Name: "nats", Fn: func(context.Context) error {
			if !rt.NC.IsConnected() {
				return errors.New("not connected")
			}
			return nil
		}})
	}
	rt.Health = telemetry.NewServer(rt.Registry, log, checks...)
	// The HTTP server stops when the service closes, not only on a signal:
	// a one-shot service such as the producer must exit once its work is
	// done, metrics on or off.
	httpCtx, stopHTTP := context.WithCancel(ctx)
	rt.stopHTTP = stopHTTP
	if rt.waitHTTP, err = rt.Health.ListenAndServe(httpCtx, c.MetricsAddr); err != nil {
		rt.Close()
		return nil, fmt.Errorf("METRICS_ADDR %s: %w", c.MetricsAddr, err)
	}
	return rt, nil
}

// natsOptionalWait is how long a service with Options.NATSOptional tries
// to reach NATS at startup.
const natsOptionalWait = 5 * time.Second

// Close releases the connections, stops the HTTP server and waits for it.
func (rt *Runtime) Close() {
	rt.stopHTTP()
	if rt.NC != nil {
		_ = rt.NC.Drain()
	}
	if rt.Pool != nil {
		rt.Pool.Close()
	}
	if err := rt.waitHTTP(); err != nil {
		rt.Log.Warn().Err(err).Msg("metrics server")
	}
}

// waitFor retries fn for up to a minute, saying so: services may start
// before the database or broker is ready (as under docker compose).
func waitFor(ctx context.Context, log zerolog.Logger, what string, fn func(context.Context) error) error {
	deadline := time.Now().Add(time.Minute)
	lastLog := time.Time{}
	for {
		attempt, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := fn(attempt)
		cancel()
		if err == nil || time.Now().After(deadline) || ctx.Err() != nil {
			return err
		}
		if time.Since(lastLog) > 5*time.Second {
			log.Warn().Err(err).Str("dependency", what).Msg("waiting for a dependency (up to 1m)")
			lastLog = time.Now()
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}
