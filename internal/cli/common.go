package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sluicehq/sluice/internal/config"
)

// conn holds the connection settings most commands take.
type conn struct {
	DatabaseURL string
	NATSURL     string
	JSON        bool
}

// newLoader returns a flag loader for "sluice <name>" with the database
// URL and --json registered; withNATS adds the NATS URL.
func newLoader(env Env, name string, c *conn, withNATS bool) *config.Loader {
	l := config.NewLoader("sluice "+name, lookupOrNone(env))
	l.FlagSet().SetOutput(env.Stderr)
	l.String(&c.DatabaseURL, "database-url", "DATABASE_URL", "postgres://postgres@127.0.0.1:5432/sluice?sslmode=disable", "PostgreSQL URL")
	if withNATS {
		l.String(&c.NATSURL, "nats-url", "NATS_URL", "nats://127.0.0.1:4222", "NATS server URL(s)")
	}
	l.Bool(&c.JSON, "json", "", false, "print JSON for machines")
	return l
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
