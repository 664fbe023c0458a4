package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/sluicehq/sluice/internal/config"
	"github.com/sluicehq/sluice/migrations"
)

func runMigrate(ctx context.Context, env Env, args []string) error {
	l := config.NewLoader("sluice migrate", lookupOrNone(env))
	l.FlagSet().SetOutput(env.Stderr)
	var dbURL string
	var dims int
	var asJSON bool
	l.String(&dbURL, "database-url", "DATABASE_URL", "postgres://postgres@127.0.0.1:5432/sluice?sslmode=disable", "PostgreSQL URL")
	l.Int(&dims, "embedding-dims", "EMBEDDING_DIMS", migrations.DefaultDims, "embedding dimension of chunk_embeddings (fixed at first migration)")
	l.Bool(&asJSON, "json", "", false, "print status as JSON")
	action := "up"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		action, args = args[0], args[1:]
	}
	rest, err := l.Parse(args)
	if err != nil {
		return usageErr("%v", err)
	}
	if len(rest) > 0 {
		return usageErr("migrate takes one action (up or status) before its flags, got extra %q", rest)
	}
	switch action {
	case "up":
		if err := migrations.Up(ctx, dbURL, migrations.Options{Dims: dims, Log: env.Stderr}); err != nil {
			return err
		}
		fmt.Fprintln(env.Stderr, "migrations: up to date")
		return nil
	case "status":
		st, err := migrations.List(ctx, dbURL)
		if err != nil {
			return err
		}
		if asJSON {
			return json.NewEncoder(env.Stdout).Encode(st)
		}
		for _, s := range st {
			state := "pending"
			if s.Applied {
				state = "applied"
			}
			fmt.Fprintf(env.Stdout, "%05d  %-8s %s\n", s.Version, state, s.Source)
		}
		return nil
	default:
		return usageErr("unknown migrate action %q: use up or status", action)
	}
}
