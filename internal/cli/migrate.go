package cli

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/sluicehq/sluice/internal/config"
	"github.com/sluicehq/sluice/migrations"
)

func runMigrate(ctx context.Context, env Env, args []string) error {
	var c conn
	var dims int
	var ownerURL, runtimePassword, readonlyPassword string
	l := newLoader(env, "migrate", &c, false)
	l.String(&ownerURL, "migrate-database-url", "MIGRATE_DATABASE_URL", "", "PostgreSQL URL of the schema owner that migrations run as (default: DATABASE_URL)")
	l.String(&runtimePassword, "runtime-password", "SLUICE_RUNTIME_PASSWORD", "", "after migrating, let "+migrations.RuntimeRole+" log in with this password (set again to rotate)")
	l.String(&readonlyPassword, "readonly-password", "SLUICE_READONLY_PASSWORD", "", "after migrating, let "+migrations.ReadonlyRole+" log in with this password (set again to rotate)")
	var demo bool
	config.RegisterDemo(l, &demo)
	l.Int(&dims, "embedding-dims", "EMBEDDING_DIMS", migrations.DefaultDims, "embedding dimension of chunk_embeddings (fixed at first migration)")
	action := "up"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		action, args = args[0], args[1:]
	}
	rest, err := parse(l, args)
	if err != nil {
		return err
	}
	if len(rest) > 0 {
		return usageErr("migrate takes one action (up or status) before its flags, got extra %q", rest)
	}
	// Services connect as the runtime role, which cannot change the
	// schema; migrations need its owner.
	url := cmp.Or(ownerURL, c.DatabaseURL)
	switch action {
	case "up":
		if err := migrations.Up(ctx, url, migrations.Options{Dims: dims, Log: env.Stderr}); err != nil {
			return err
		}
		if !demo {
			if err := errors.Join(config.CheckPassword("SLUICE_RUNTIME_PASSWORD", migrations.RuntimeRole, runtimePassword),
				config.CheckPassword("SLUICE_READONLY_PASSWORD", migrations.ReadonlyRole, readonlyPassword)); err != nil {
				return usageErr("%v", err)
			}
		}
		if err := setLogins(ctx, env, url, map[string]string{migrations.RuntimeRole: runtimePassword, migrations.ReadonlyRole: readonlyPassword}); err != nil {
			return err
		}
		fmt.Fprintln(env.Stderr, "migrations: up to date")
		return nil
	case "status":
		st, err := migrations.List(ctx, url)
		if err != nil {
			return err
		}
		if c.JSON {
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

// setLogins lets each role with a password log in with it.
func setLogins(ctx context.Context, env Env, url string, passwords map[string]string) error {
	var conn *pgx.Conn
	for role, password := range passwords {
		if password == "" {
			continue
		}
		if conn == nil {
			var err error
			if conn, err = pgx.Connect(ctx, url); err != nil {
				return fmt.Errorf("connect to set the roles' passwords: %w", err)
			}
			defer conn.Close(context.WithoutCancel(ctx))
		}
		if err := migrations.SetLogin(ctx, conn, role, password); err != nil {
			return err
		}
		fmt.Fprintf(env.Stderr, "migrations: %s may log in\n", role)
	}
	return nil
}
