package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/sluicehq/sluice/internal/platform/broker"
	"github.com/sluicehq/sluice/internal/platform/config"
)

// conn holds the connection settings most commands take, registered by
// the services' own loader functions: the same variables, defaults,
// credentials and TLS.
type conn struct {
	config.Common
	JSON bool
	// Settle bounds each JetStream read's wait through a settling
	// cluster; zero, for a command whose loader has no NATS settings,
	// means no such wait.
	Settle time.Duration
}

// newLoader returns a flag loader for "sluice <name>" with the database
// URL and --json registered; withNATS adds the NATS settings.
func newLoader(env Env, name string, c *conn, withNATS bool) *config.Loader {
	l := config.NewLoader("sluice "+name, lookupOrNone(env))
	l.FlagSet().SetOutput(env.Stderr)
	config.RegisterDatabase(l, &c.Common)
	if withNATS {
		config.RegisterNATS(l, &c.Common)
		l.Duration(&c.Settle, "settle-timeout", "NATS_SETTLE_TIMEOUT", broker.DefaultSettlePatience,
			"how long each JetStream read waits through a settling cluster (leaders being elected after a node restarted) before the command gives up (0: at the first failure)")
	}
	l.Bool(&c.JSON, "json", "", false, "print JSON for machines")
	return l
}

// connectNATS connects with the command's NATS settings. With a Settle
// bound, the JetStream it returns waits through a settling cluster on
// every read (see settlingJS).
func (c *conn) connectNATS(name string, log zerolog.Logger) (*nats.Conn, jetstream.JetStream, error) {
	if err := c.ValidateNATS(); err != nil {
		return nil, nil, usageErr("%v", err)
	}
	if c.Settle < 0 {
		return nil, nil, usageErr("NATS_SETTLE_TIMEOUT %s: use a positive duration such as 30s", c.Settle)
	}
	nc, js, err := broker.Connect(broker.ConnConfigOf(c.Common, name), log)
	if err != nil || c.Settle == 0 {
		return nc, js, err
	}
	return nc, newSettlingJS(js, broker.SettleConfig{Patience: c.Settle}), nil
}

// parse parses args, turning flag errors into usage errors.
func parse(l *config.Loader, args []string) ([]string, error) {
	rest, err := l.Parse(args)
	if err != nil {
		return nil, usageErr("%v", err)
	}
	return rest, nil
}

func openPool(ctx context.Context, url string) (*pgxpool.Pool, error) {
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		return nil, fmt.Errorf("connect to postgres %s: %w", config.Redact(url), err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("connect to postgres %s: %w", config.Redact(url), err)
	}
	return pool, nil
}

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// subcommand dispatches "sluice <group> <sub> ...".
func subcommand(ctx context.Context, env Env, group string, subs map[string]command, args []string) error {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return usageErr("sluice %s needs a subcommand: %s", group, strings.Join(sortedKeys(subs), ", "))
	}
	cmd, ok := subs[args[0]]
	if !ok {
		return usageErr("unknown subcommand %q of sluice %s: use one of %s", args[0], group, strings.Join(sortedKeys(subs), ", "))
	}
	return cmd.run(ctx, env, args[1:])
}
