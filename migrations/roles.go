package migrations

import (
	"context"
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"

	"github.com/jackc/pgx/v5"
)

// The roles migrations 11 and 20 create, NOLOGIN: one per service, each
// granted only what its statements need (00020_service_roles.sql).
const (
	// ProducerRole is the producer's.
	ProducerRole = "sluice_producer"
	// ConsumerRole is the consumer's.
	ConsumerRole = "sluice_consumer"
	// RelayRole is the outbox relay's.
	RelayRole = "sluice_relay"
	// ReplayerRole is dlq-replayer's: triage, the replayer, the alerter
	// and retention.
	ReplayerRole = "sluice_replayer"
	// OperatorRole is the sluice CLI's, the only role that may read an
	// escalated chunk's text, through reveal_escalated_text.
	OperatorRole = "sluice_operator"
	// ConsoleRole is sluice console's.
	ConsoleRole = "sluice_console"
	// ReadonlyRole reads every table but escalated_chunks.
	ReadonlyRole = "sluice_readonly"
	// RuntimeRole is the role every service shared before migration 20,
	// which took all its privileges away. Nothing connects as it.
	RuntimeRole = "sluice_runtime"
)

// Role is a login role sluice migrate manages: its name and the setting
// that carries its password.
type Role struct {
	// Name is the PostgreSQL role.
	Name string
	// PasswordEnv is the environment variable sluice migrate reads its
	// password from.
	PasswordEnv string
	// For says who connects as it.
	For string
}

// Roles are the roles a deployment lets log in, in the order sluice
// migrate sets them.
var Roles = []Role{
	{ProducerRole, "SLUICE_PRODUCER_PASSWORD", "the producer"},
	{ConsumerRole, "SLUICE_CONSUMER_PASSWORD", "the consumer"},
	{RelayRole, "SLUICE_RELAY_PASSWORD", "the outbox relay"},
	{ReplayerRole, "SLUICE_REPLAYER_PASSWORD", "dlq-replayer"},
	{OperatorRole, "SLUICE_OPERATOR_PASSWORD", "the sluice CLI"},
	{ConsoleRole, "SLUICE_CONSOLE_PASSWORD", "sluice console"},
	{ReadonlyRole, "SLUICE_READONLY_PASSWORD", "reports"},
}

// SetLogin lets role log in with password, on conn, a connection as a
// role allowed to alter it (the schema owner with CREATEROLE, or a
// superuser). Running it again with a new password rotates it; sessions
// already open keep running. The server is sent a SCRAM-SHA-256
// verifier, never the password, so that no statement log
// (log_statement=ddl) or pg_stat_activity view ever holds it.
func SetLogin(ctx context.Context, conn *pgx.Conn, role, password string) error {
	verifier, err := scramVerifier(password, rand.Reader)
	if err != nil {
		return fmt.Errorf("set %s's password: %w", role, err)
	}
	// ALTER ROLE takes no parameters. The role is quoted as an
	// identifier; the verifier is base64 and '$', ':' only, so it needs
	// no escaping inside a literal.
	stmt := fmt.Sprintf("ALTER ROLE %s LOGIN PASSWORD '%s'", pgx.Identifier{role}.Sanitize(), verifier)
	if _, err := conn.Exec(ctx, stmt); err != nil {
		return fmt.Errorf("set %s's password: %w", role, err)
	}
	return nil
}

// scramIterations is PostgreSQL's own default (scram_iterations).
const scramIterations = 4096

// scramVerifier returns the SCRAM-SHA-256 verifier PostgreSQL stores for
// password (RFC 5802, RFC 7677): SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey>.
// PostgreSQL normalises a password with SASLprep before hashing it; for
// printable ASCII that is the identity, and other passwords are refused
// rather than stored under a verifier that might not match.
func scramVerifier(password string, random io.Reader) (string, error) {
	if password == "" {
		return "", errors.New("the password is empty")
	}
	for _, r := range password {
		if r < 0x20 || r > 0x7e {
			return "", errors.New("use a password of printable ASCII characters")
		}
	}
	salt := make([]byte, 16)
	if _, err := io.ReadFull(random, salt); err != nil {
		return "", fmt.Errorf("salt: %w", err)
	}
	salted, err := pbkdf2.Key(sha256.New, password, salt, scramIterations, sha256.Size)
	if err != nil {
		return "", err
	}
	hmacOf := func(key []byte, msg string) []byte {
		h := hmac.New(sha256.New, key)
		h.Write([]byte(msg))
		return h.Sum(nil)
	}
	stored := sha256.Sum256(hmacOf(salted, "Client Key"))
	server := hmacOf(salted, "Server Key")
	b64 := base64.StdEncoding.EncodeToString
	return fmt.Sprintf("SCRAM-SHA-256$%d:%s$%s:%s", scramIterations, b64(salt), b64(stored[:]), b64(server)), nil
}

// RoleForBinary is the role a Sluice binary connects as: producer,
// consumer, outbox-relay, dlq-replayer, sluice (the CLI), or
// "sluice console".
func RoleForBinary(name string) (string, error) {
	switch name {
	case "producer":
		return ProducerRole, nil
	case "consumer":
		return ConsumerRole, nil
	case "outbox-relay":
		return RelayRole, nil
	case "dlq-replayer":
		return ReplayerRole, nil
	case "sluice":
		return OperatorRole, nil
	case "sluice console":
		return ConsoleRole, nil
	}
	return "", fmt.Errorf("no PostgreSQL role for binary %q", name)
}

// ActsAs reports whether the session's user has role's privileges: it is
// the role, a member of it that inherits them, or a superuser. exists is
// false when the role is missing, as it is before sluice migrate ran.
func ActsAs(ctx context.Context, q interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}, role string) (exists, ok bool, err error) {
	err = q.QueryRow(ctx, `SELECT count(*) > 0, coalesce(bool_or(pg_has_role(current_user, oid, 'USAGE')), false)
		FROM pg_roles WHERE rolname = $1`, role).Scan(&exists, &ok)
	if err != nil {
		return false, false, fmt.Errorf("check role %s: %w", role, err)
	}
	return exists, ok, nil
}
