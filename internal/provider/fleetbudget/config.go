package fleetbudget

import (
	"errors"
	"fmt"
	"time"

	"github.com/sluicehq/sluice/internal/platform/broker"
)

// Config is a member's configuration.
type Config struct {
	// Key is the budget key: members with the same key share one budget.
	// Required; see Fingerprint.
	Key string
	// Service names the member's service in its entry. Defaults to
	// "sluice".
	Service string
	// Heartbeat spaces the member's heartbeats, each of which also
	// recomputes its share. Defaults to DefaultHeartbeat.
	Heartbeat time.Duration
	// HungryWait is the share of a heartbeat's interval that the
	// member's requests must have waited for budget, summed, or that its
	// waiting requests are queued ahead, for it to claim an equal share.
	// Defaults to DefaultHungryWait.
	HungryWait float64
}

// Defaults of Config.
const (
	DefaultService    = "sluice"
	DefaultHeartbeat  = 2 * time.Second
	DefaultHungryWait = 0.25
)

func (c *Config) applyDefaults() {
	if c.Service == "" {
		c.Service = DefaultService
	}
	if c.Heartbeat == 0 {
		c.Heartbeat = DefaultHeartbeat
	}
	if c.HungryWait == 0 {
		c.HungryWait = DefaultHungryWait
	}
}

// Validate says what is wrong with the configuration and how to fix it.
func (c Config) Validate() error {
	c.applyDefaults()
	var errs []error
	if err := checkKey(c.Key); err != nil {
		errs = append(errs, err)
	}
	if c.Heartbeat <= 0 || c.Heartbeat > broker.BudgetMemberTTL/3 {
		errs = append(errs, fmt.Errorf("budget heartbeat %s: use a positive duration of at most %s, a third of the bucket's TTL, so that a live member never expires", c.Heartbeat, broker.BudgetMemberTTL/3))
	}
	if c.HungryWait <= 0 {
		errs = append(errs, fmt.Errorf("budget hungry wait %g: use a positive share of the heartbeat, e.g. %g", c.HungryWait, DefaultHungryWait))
	}
	return errors.Join(errs...)
}
