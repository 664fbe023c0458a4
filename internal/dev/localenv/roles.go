package localenv

import (
	"context"
	"fmt"
	"net/url"

	"github.com/jackc/pgx/v5"

	"github.com/sluicehq/sluice/migrations"
)

// AllowRoleLogins lets the roles the migrations create NOLOGIN
// (migrations.Roles) log in on the server at adminURL. Local servers trust loopback, so that is all it takes to
// connect as them; a real deployment sets passwords.
func AllowRoleLogins(ctx context.Context, adminURL string) error {
	for _, role := range migrations.Roles {
		if err := AdminExec(ctx, adminURL, `ALTER ROLE `+role.Name+` LOGIN`); err != nil {
			return fmt.Errorf("let %s log in: %w", role.Name, err)
		}
	}
	return nil
}

// AsRole is the postgres:// URL raw with user in place of its user and
// password.
func AsRole(raw, user string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	u.User = url.User(user)
	return u.String()
}

// AdminExec runs one statement on its own connection to url: for
// statements such as CREATE DATABASE that cannot run in a transaction.
func AdminExec(ctx context.Context, url, sql string) error {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	_, err = conn.Exec(ctx, sql)
	return err
}
