package service

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	"github.com/failsafe-go/failsafe-go"
	"github.com/failsafe-go/failsafe-go/retrypolicy"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/sluicehq/sluice/internal/platform/broker"
	"github.com/sluicehq/sluice/internal/platform/config"
	"github.com/sluicehq/sluice/internal/platform/telemetry"
	"github.com/sluicehq/sluice/migrations"
	"github.com/sluicehq/sluice/pkg/classify"
	"github.com/sluicehq/sluice/pkg/vectorstore"
)

// Runtime is a started service's shared plumbing.
type Runtime struct {
	// Name is the service's name, as given to Start.
	Name     string
	Log      zerolog.Logger
	Registry *prometheus.Registry
	Pool     *pgxpool.Pool
	NC       *nats.Conn
	JS       jetstream.JetStream
	Health   *telemetry.Server

	waitHTTP func() error
	stopHTTP context.CancelFunc
	// started is set by Started, once the service does its work.
	started atomic.Bool
}

// errStarting is the "started" check's failure until Started.
var errStarting = errors.New("still starting")

// Started marks the service as doing its work: /readyz answers ready
// from then on, while its dependencies answer. Before, a service still
// joining what it needs (the fleet budget, say) is not ready, so that a
// supervisor or a test waiting for readiness does not take it for a
// service that can lose a dependency and carry on.
func (rt *Runtime) Started() { rt.started.Store(true) }

// StartConfig adjust Start.
type StartConfig struct {
	// MaxConns sizes the PostgreSQL pool. Defaults to pgx's default.
	MaxConns int32
	// NoNATS skips the NATS connection, for services that do not use it.
	NoNATS bool
	// NATSOptional lets the service start while JetStream does not answer,
	// after one short try to verify the topology: the producer then
	// records its run, and what it cannot publish stays owed for the
	// outbox-relay. A misconfiguration still stops it (see
	// classify.AtStartup): NATS must accept the connection.
	NATSOptional bool
}

// Start builds a service's runtime. Close releases it.
func Start(ctx context.Context, name string, c config.Common, opts StartConfig, stderr io.Writer) (*Runtime, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	tuneGC()
	log, err := telemetry.NewLogger(stderr, name, c.LogLevel, c.LogFormat)
	if err != nil {
		return nil, err
	}
	rt := &Runtime{Name: name, Log: log, Registry: telemetry.NewRegistry(), waitHTTP: func() error { return nil }, stopHTTP: func() {}}
	if err := rt.connectPostgres(ctx, name, c, opts); err != nil {
		rt.Close()
		return nil, err
	}
	checks := []telemetry.Check{{Name: "postgres", Fn: func(ctx context.Context) error { return config.RedactError(rt.Pool.Ping(ctx)) }}}
	if !opts.NoNATS {
		if err := rt.connectNATS(ctx, name, c, opts); err != nil {
			rt.Close()
			return nil, err
		}
		checks = append(checks, telemetry.Check{Name: "nats", Fn: func(context.Context) error {
			if !rt.NC.IsConnected() {
				return errors.New("not connected")
			}
			return nil
		}})
	}
	checks = append(checks, telemetry.Check{Name: "started", Fn: func(context.Context) error {
		if !rt.started.Load() {
			return errStarting
		}
		return nil
	}})
	rt.Health = telemetry.NewServer(rt.Registry, log, checks...)
	// The HTTP server stops when the service closes, not only on a signal:
	// a one-shot service such as the producer must exit once its work is
	// done, metrics on or off.
	httpCtx, stopHTTP := context.WithCancel(ctx)
	rt.stopHTTP = stopHTTP
	waitHTTP, err := rt.Health.ListenAndServe(httpCtx, c.MetricsAddr)
	if err != nil {
		rt.Close()
		return nil, fmt.Errorf("METRICS_ADDR %s: %w", c.MetricsAddr, err)
	}
	rt.waitHTTP = waitHTTP
	return rt, nil
}

// connectPostgres opens the pool and waits for PostgreSQL to answer.
func (rt *Runtime) connectPostgres(ctx context.Context, name string, c config.Common, opts StartConfig) error {
	pcfg, err := pgxpool.ParseConfig(c.DatabaseURL)
	if err != nil {
		return fmt.Errorf("DATABASE_URL: %w", err)
	}
	if opts.MaxConns > 0 {
		pcfg.MaxConns = opts.MaxConns
	}
	pcfg.ConnConfig.RuntimeParams["application_name"] = "sluice-" + name
	pcfg.AfterConnect = vectorstore.RegisterTypes
	boundSQL(pcfg, c.SQLTimeout, rt.Log)
	if rt.Pool, err = pgxpool.NewWithConfig(ctx, pcfg); err != nil {
		return fmt.Errorf("connect to postgres %s: %w", config.Redact(c.DatabaseURL), err)
	}
	if err := waitFor(ctx, rt.Log, "postgres", func(ctx context.Context) error { return rt.Pool.Ping(ctx) }); err != nil {
		if fault := c.Fault(name, err, true); fault != err {
			return fault
		}
		return fmt.Errorf("postgres %s: %w", config.Redact(c.DatabaseURL), err)
	}
	return rt.checkRole(ctx, name, c)
}

// checkRole stops a service whose DATABASE_URL user lacks the privileges
// of the service's PostgreSQL role before it does any work: otherwise
// the first statement it may not run fails it midway through a run.
// A name without a role of its own is not checked.
func (rt *Runtime) checkRole(ctx context.Context, name string, c config.Common) error {
	role, err := migrations.RoleForBinary(name)
	if err != nil {
		return nil
	}
	exists, ok, err := migrations.ActsAs(ctx, rt.Pool, role)
	switch {
	case err != nil:
		return fmt.Errorf("postgres %s: %w", config.Redact(c.DatabaseURL), err)
	case !exists:
		return c.PrivilegeFault(name, fmt.Errorf("role %s does not exist: the database's schema is not migrated", role))
	case !ok:
		return c.PrivilegeFault(name, fmt.Errorf("the user is neither role %s nor a member of it", role))
	}
	return nil
}

// connectNATS connects to NATS and checks the topology, which the
// topology owner declares (sluice nats setup): a service only checks it,
// waiting as for any dependency, or, with Options.NATSOptional, trying
// once briefly.
func (rt *Runtime) connectNATS(ctx context.Context, name string, c config.Common, opts StartConfig) error {
	var err error
	if rt.NC, rt.JS, err = broker.Connect(broker.ConnConfigOf(c, "sluice-"+name), rt.Log); err != nil {
		return c.Fault(name, err, true)
	}
	verify := func(ctx context.Context) error { return broker.Verify(ctx, rt.JS) }
	if opts.NATSOptional {
		attempt, cancel := context.WithTimeout(ctx, natsOptionalWait)
		defer cancel()
		if err := verify(attempt); err != nil {
			if fault := c.Fault(name, err, true); fault != err {
				return fault
			}
			rt.Log.Warn().Err(err).Msg("NATS unreachable at startup; going on without it")
		}
		return nil
	}
	if err := waitFor(ctx, rt.Log, "nats", verify); err != nil {
		return c.Fault(name, fmt.Errorf("verify jetstream topology: %w", err), true)
	}
	return nil
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

// waitFor retries fn for up to a minute, saying so at most every
// dependencyLogEvery: services may start before the database or broker is
// ready (as under docker compose). Each attempt is bounded by
// dependencyAttempt. A misconfiguration (classify.AtStartup: rejected
// credentials, a missing database, nothing listening at the address) is
// not waited for: it ends the wait at once.
func waitFor(ctx context.Context, log zerolog.Logger, what string, fn func(context.Context) error) error {
	var lastLog time.Time
	policy := retrypolicy.NewBuilder[any]().
		WithMaxRetries(-1).
		WithMaxDuration(dependencyPatience).
		WithDelay(dependencyDelay).
		AbortIf(func(_ any, err error) bool {
			_, misconfigured := classify.AtStartup(err)
			return ctx.Err() != nil || misconfigured
		}).
		ReturnLastFailure().
		OnRetryScheduled(func(e failsafe.ExecutionScheduledEvent[any]) {
			if time.Since(lastLog) > dependencyLogEvery {
				log.Warn().Err(e.LastError()).Str("dependency", what).Msg("waiting for a dependency (up to 1m)")
				lastLog = time.Now()
			}
		}).
		Build()
	return failsafe.With(policy).WithContext(ctx).Run(func() error {
		attempt, cancel := context.WithTimeout(ctx, dependencyAttempt)
		defer cancel()
		return fn(attempt)
	})
}

// Bounds of waitFor.
const (
	dependencyPatience = time.Minute
	dependencyDelay    = 500 * time.Millisecond
	dependencyAttempt  = 5 * time.Second
	dependencyLogEvery = 5 * time.Second
)
