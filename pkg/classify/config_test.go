package classify_test

import (
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/sluicehq/sluice/pkg/classify"
)

// silent stands for an error that knows the server is not the kind
// configured.
type silent struct{}

func (silent) Error() string     { return "no greeting" }
func (silent) WrongServer() bool { return true }

func TestMisconfiguredAndAtStartup(t *testing.T) {
	t.Parallel()
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	pgRefused, err := pgconn.Connect(t.Context(), "postgres://u@127.0.0.1:1/db?connect_timeout=2")
	if err == nil {
		pgRefused.Close(t.Context())
		t.Fatal("something listens on port 1")
	}
	for _, tc := range []struct {
		name      string
		err       error
		always    string // Misconfigured's class, empty for none
		atStartup string // AtStartup's class, empty for none
	}{
		{"nil", nil, "", ""},
		{"nats authorization", fmt.Errorf("connect: %w", nats.ErrAuthorization), classify.ClassBrokerAuth, classify.ClassBrokerAuth},
		{"nats permissions", fmt.Errorf("%w: publish to ingest.chunks.a", nats.ErrPermissionViolation), classify.ClassBrokerAuth, classify.ClassBrokerAuth},
		{"no INFO", nats.ErrNoInfoReceived, classify.ClassBrokerWrongServer, classify.ClassBrokerWrongServer},
		{"headers not supported", nats.ErrHeadersNotSupported, classify.ClassBrokerWrongServer, classify.ClassBrokerWrongServer},
		{"jetstream not enabled", jetstream.ErrJetStreamNotEnabled, classify.ClassBrokerWrongServer, classify.ClassBrokerWrongServer},
		{"silent server", fmt.Errorf("connect: %w", silent{}), classify.ClassBrokerWrongServer, classify.ClassBrokerWrongServer},
		{"nats refused", fmt.Errorf("%w: %w", nats.ErrNoServers, refused), "", classify.ClassBrokerRefused},
		{"postgres refused", err, "", classify.ClassDatabaseRefused},
		{"invalid password", &pgconn.PgError{Code: "28P01"}, classify.ClassDatabaseAuth, classify.ClassDatabaseAuth},
		{"invalid authorization", &pgconn.PgError{Code: "28000"}, classify.ClassDatabaseAuth, classify.ClassDatabaseAuth},
		{"unknown database", &pgconn.PgError{Code: "3D000"}, classify.ClassDatabaseMissing, classify.ClassDatabaseMissing},
		{"insufficient privilege", &pgconn.PgError{Code: "42501"}, classify.ClassDatabasePrivilege, classify.ClassDatabasePrivilege},
		{"undefined table", &pgconn.PgError{Code: "42P01"}, "", ""},
		{"nats unavailable", nats.ErrNoServers, "", ""},
		{"timeout", nats.ErrTimeout, "", ""},
		{"reset", syscall.ECONNRESET, "", ""},
		{"other", errors.New("boom"), "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got, ok := classify.Misconfigured(tc.err); got != tc.always || ok != (tc.always != "") {
				t.Errorf("Misconfigured(%v) = %q, %v; want %q", tc.err, got, ok, tc.always)
			}
			if got, ok := classify.AtStartup(tc.err); got != tc.atStartup || ok != (tc.atStartup != "") {
				t.Errorf("AtStartup(%v) = %q, %v; want %q", tc.err, got, ok, tc.atStartup)
			}
		})
	}
}
