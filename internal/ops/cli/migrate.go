package cli

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/sluicehq/sluice/internal/platform/config"
	"github.com/sluicehq/sluice/migrations"
)

func runMigrate(ctx context.Context, env Env, args []string) error {
	var c conn
	var dims int
	var ownerURL string
	l := newLoader(env, "migrate", &c, false)
	l.String(&ownerURL, "migrate-database-url", "MIGRATE_DATABASE_URL", "", "PostgreSQL URL of the schema owner that migrations run as (default: DATABASE_URL)")
	passwords := make([]string, len(migrations.Roles))
	for i, role := range migrations.Roles {
		flag := strings.ToLower(strings.ReplaceAll(strings.TrimPrefix(role.PasswordEnv, "SLUICE_"), "_", "-"))
		l.String(&passwords[i], flag, role.PasswordEnv, "", "after migrating, let "+role.Name+" ("+role.For+") log in with this password (set again to rotate)")
	}
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
	// Services connect as their own roles, which cannot change the
	// schema; migrations need its owner.
	url := cmp.Or(ownerURL, c.DatabaseURL)
	switch action {
	case "up":
		return migrateUp(ctx, env, url, dims, demo, passwords)
	case "status":
		return migrateStatus(ctx, env, url, c.JSON)
	default:
		return usageErr("unknown migrate action %q: use up or status", action)
	}
}

// migrateUp applies every migration as the schema owner at url, then lets
// each service role with a password log in with it.
func migrateUp(ctx context.Context, env Env, url string, dims int, demo bool, passwords []string) error {
	if err := migrations.Up(ctx, url, migrations.Options{Dims: dims, Log: env.Stderr}); err != nil {
		return err
	}
	if !demo {
		var errs []error
		for i, role := range migrations.Roles {
			errs = append(errs, config.CheckPassword(role.PasswordEnv, role.Name, passwords[i]))
		}
		if err := errors.Join(errs...); err != nil {
			return usageErr("%v", err)
		}
	}
	if err := setLogins(ctx, env, url, passwords); err != nil {
		return err
	}
	fmt.Fprintln(env.Stderr, "migrations: up to date")
	return nil
}

// migrateStatus lists each migration and whether it is applied.
func migrateStatus(ctx context.Context, env Env, url string, asJSON bool) error {
	st, err := migrations.List(ctx, url)
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
}

// setLogins lets each of migrations.Roles with a password (passwords[i]
// for Roles[i]) log in with it.
func setLogins(ctx context.Context, env Env, url string, passwords []string) error {
	var conn *pgx.Conn
	for i, password := range passwords {
		if password == "" {
			continue
		}
		role := migrations.Roles[i].Name
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
