package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/sluicehq/sluice/internal/broker"
	"github.com/sluicehq/sluice/internal/config"
)

// conn holds the connection settings most commands take, registered by
// the services' own loader functions: the same variables, defaults,
// credentials and TLS.
type conn struct {
	config.Common
	JSON bool
}

// newLoader returns a flag loader for "sluice <name>" with the database
// URL and --json registered; withNATS adds the NATS settings.
func newLoader(env Env, name string, c *conn, withNATS bool) *config.Loader {
	l := config.NewLoader("sluice "+name, lookupOrNone(env))
	l.FlagSet().SetOutput(env.Stderr)
	config.RegisterDatabase(l, &c.Common)
	if withNATS {
		config.RegisterNATS(l, &c.Common)
	}
	l.Bool(&c.JSON, "json", "", false, "print JSON for machines")
	return l
}

// connectNATS connects with the command's NATS settings.
func (c *conn) connectNATS(name string, log zerolog.Logger) (*nats.Conn, jetstream.JetStream, error) {
	if err := c.ValidateNATS(); err != nil {
		return nil, nil, usageErr("%v", err)
	}
	return broker.Connect(c.NATSConn(name), log)
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
