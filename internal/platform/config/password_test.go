package config_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/platform/config"
)

func TestCheckPassword(t *testing.T) {
	for _, c := range []struct {
		user, password string
		weak           string // a part of the reason, or "" for accepted
	}{
		{"sluice_runtime", "", ""},
		{"producer", "f3a1c9e0b7d24c55a1e0", ""},
		{"producer", "sluice-producer", "default shipped"},
		{"sluice", "sluice", "default shipped"},
		{"grafana", "admin", "default shipped"},
		{"operator", "OPERATOR", "user's name"},
		{"consumer", "hunter2", "shorter than 12"},
	} {
		err := config.CheckPassword("NATS_URL", c.user, c.password)
		switch {
		case c.weak == "" && err != nil:
			t.Errorf("%s/%s: %v, want accepted", c.user, c.password, err)
		case c.weak != "" && (!errors.Is(err, config.ErrWeakPassword) || !strings.Contains(err.Error(), c.weak) || !strings.Contains(err.Error(), "SLUICE_DEMO=1")):
			t.Errorf("%s/%s: %v, want ErrWeakPassword saying %q and how to allow it for a demo", c.user, c.password, err, c.weak)
		case err != nil && !strings.EqualFold(c.password, c.user) && strings.Contains(err.Error(), c.password):
			t.Errorf("%s: the error %q holds the password", c.user, err)
		}
	}
}

// A service refuses a shipped password in DATABASE_URL or NATS_URL
// unless SLUICE_DEMO is set.
func TestCommonRefusesShippedPasswordsOutsideADemo(t *testing.T) {
	c := config.Common{
		DatabaseURL: "postgres://sluice_runtime:sluice-runtime@db:5432/sluice", NATSURL: "nats://a:4222,nats://consumer:sluice-consumer@b:4222",
		LogLevel: "info", LogFormat: "json", EmbeddingDims: 384, SQLTimeout: 1, NATSPingInterval: 1,
	}
	err := c.Validate()
	for _, want := range []string{"DATABASE_URL", "NATS_URL"} {
		if !errors.Is(err, config.ErrWeakPassword) || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate: %v, want a weak password named in %s", err, want)
		}
	}
	c.Demo = true
	if err := c.Validate(); err != nil {
		t.Errorf("Validate in a demo: %v, want nil", err)
	}
}
