package dlq_test

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/failure/dlq"
	"github.com/sluicehq/sluice/internal/platform/config/configtest"
)

func TestTriageOptionsValidate(t *testing.T) {
	t.Parallel()
	configtest.Run(t, []configtest.Case[dlq.TriageConfig]{
		{Name: "defaults"},
		{Name: "escalations kept longer", Config: dlq.TriageConfig{PayloadRetention: time.Hour, EscalationRetention: 2 * time.Hour}},
		{Name: "negative retention", Config: dlq.TriageConfig{PayloadRetention: -time.Hour}, Want: "use positive durations, or 0 for the defaults"},
		{Name: "negative timeout", Config: dlq.TriageConfig{Timeout: -time.Second}, Want: "timeout -1s"},
		{Name: "negative history retention", Config: dlq.TriageConfig{HistoryRetention: -time.Hour}, Want: "history retention -1h0m0s"},
		{Name: "escalations kept shorter", Config: dlq.TriageConfig{PayloadRetention: 2 * time.Hour, EscalationRetention: time.Hour}, Want: "escalation retention 1h0m0s is below payload retention 2h0m0s"},
	})
}

func TestServiceConfigValidate(t *testing.T) {
	t.Parallel()
	valid := dlq.ServiceConfig{Roles: dlq.DefaultRoles, SpikeWindow: dlq.DefaultSpikeWindow, Housekeeping: dlq.DefaultHousekeeping}
	with := func(adjust func(*dlq.ServiceConfig)) *dlq.ServiceConfig {
		c := valid
		adjust(&c)
		return &c
	}
	configtest.Run(t, []configtest.Case[*dlq.ServiceConfig]{
		{Name: "defaults", Config: &valid},
		{Name: "one role", Config: with(func(c *dlq.ServiceConfig) { c.Roles = "triage" })},
		{Name: "unknown role", Config: with(func(c *dlq.ServiceConfig) { c.Roles = "triage,janitor" }), Want: `unknown role "janitor"`},
		{Name: "no role", Config: with(func(c *dlq.ServiceConfig) { c.Roles = " , " }), Want: "--roles is empty"},
		{Name: "negative spike window", Config: with(func(c *dlq.ServiceConfig) { c.SpikeWindow = -time.Minute }), Want: "SPIKE_WINDOW -1m0s"},
		{Name: "no housekeeping interval", Config: with(func(c *dlq.ServiceConfig) { c.Housekeeping = 0 }), Want: "HOUSEKEEPING_INTERVAL 0s"},
	})
}
