package migrations

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// The roles migration 11 creates, NOLOGIN.
const (
	// RuntimeRole may read and write rows and change nothing else: what
	// services and the operator CLI connect as.
	RuntimeRole = "sluice_runtime"
	// ReadonlyRole reads every table but escalated_chunks.
	ReadonlyRole = "sluice_readonly"
)

// SetLogin lets role log in with password, connecting to url as a role
// allowed to alter it (the schema owner with CREATEROLE, or a superuser).
// Running it again with a new password rotates it; sessions already open
// keep running.
func SetLogin(ctx context.Context, url, role, password string) error {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return fmt.Errorf("connect to set %s's password: %w", role, err)
	}
	defer conn.Close(context.Background())
	// ALTER ROLE takes no parameters; format quotes both safely.
	var stmt string
	if err := conn.QueryRow(ctx, `SELECT format('ALTER ROLE %I LOGIN PASSWORD %L', $1::text, $2::text)`, role, password).Scan(&stmt); err != nil {
		return fmt.Errorf("set %s's password: %w", role, err)
	}
	if _, err := conn.Exec(ctx, stmt); err != nil {
		return fmt.Errorf("set %s's password: %w", role, err)
	}
	return nil
}
