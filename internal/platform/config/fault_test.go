package config_test

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/nats-io/nats.go"

	"github.com/sluicehq/sluice/internal/platform/config"
)

// errRefused is a dial that nothing listened to.
var errRefused error = &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}

func TestFaultNamesTheSettingToFix(t *testing.T) {
	t.Parallel()
	const secret = "s3cret-password-of-the-role"
	c := config.Common{
		DatabaseURL: "postgres://sluice_producer:" + secret + "@db:5432/sluice",
		NATSURL:     "nats://producer:" + secret + "@nats:4222",
	}
	withCreds := c
	withCreds.NATSCreds = "/etc/sluice/producer.creds"
	for _, tc := range []struct {
		name    string
		c       config.Common
		err     error
		startup bool
		setting string // empty: err comes back unchanged
		fix     string
	}{
		{"wrong password", c, &pgconn.PgError{Code: "28P01"}, false, "DATABASE_URL", "SLUICE_PRODUCER_PASSWORD"},
		{"missing database", c, &pgconn.PgError{Code: "3D000"}, false, "DATABASE_URL", `database "sluice" does not exist`},
		{"no grants", c, &pgconn.PgError{Code: "42501"}, false, "DATABASE_URL", "GRANT sluice_producer TO sluice_producer"},
		{"nats user", c, nats.ErrAuthorization, false, "NATS_URL", `user "producer"`},
		{"nats credentials file", withCreds, nats.ErrAuthorization, false, "NATS_CREDS", "credentials of producer's own user"},
		{"wrong server", c, nats.ErrNoInfoReceived, true, "NATS_URL", "4222"},
		{"nats refused at startup", c, fmt.Errorf("%w: %w", nats.ErrNoServers, errRefused), true, "NATS_URL", "start NATS"},
		{"nats refused later", c, fmt.Errorf("%w: %w", nats.ErrNoServers, errRefused), false, "", ""},
		{"an outage", c, nats.ErrTimeout, true, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := tc.c.Fault("producer", tc.err, tc.startup)
			se, ok := errors.AsType[*config.SettingError](got)
			if tc.setting == "" {
				if ok || got != tc.err {
					t.Fatalf("Fault(%v) = %v, want it unchanged", tc.err, got)
				}
				return
			}
			if !ok || se.Setting != tc.setting || !errors.Is(got, tc.err) {
				t.Fatalf("Fault(%v) = %v, want a SettingError naming %s that wraps it", tc.err, got, tc.setting)
			}
			msg := got.Error()
			if !strings.HasPrefix(msg, tc.setting+" ") || !strings.Contains(msg, tc.fix) || strings.Contains(msg, secret) {
				t.Errorf("message %q: want it to start with %s, say %q and hide the password", msg, tc.setting, tc.fix)
			}
		})
	}
}
