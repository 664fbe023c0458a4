package retention

import (
	"errors"
	"fmt"
	"time"
)

// Config is a Purger's configuration. The zero value gives the defaults.
type Config struct {
	// Interval spaces the passes; the first runs at once. Defaults to
	// DefaultInterval.
	Interval time.Duration
	// Batch is the most rows one statement purges. Defaults to
	// DefaultBatch.
	Batch int
}

// Defaults of Config.
const (
	// DefaultInterval is an hour: retention is counted in days, so a pass
	// an hour late keeps nothing noticeably longer.
	DefaultInterval = time.Hour
	// DefaultBatch keeps each statement's locks short, so triage and
	// replays never wait long on a purge.
	DefaultBatch = 5000
)

func (c *Config) applyDefaults() {
	if c.Interval == 0 {
		c.Interval = DefaultInterval
	}
	if c.Batch == 0 {
		c.Batch = DefaultBatch
	}
}

// Validate says what is wrong with c and how to fix it. Zero fields take
// their defaults.
func (c Config) Validate() error {
	var errs []error
	if c.Interval < 0 {
		errs = append(errs, fmt.Errorf("retention: interval %s: use a positive duration, or 0 for the default (%s)", c.Interval, DefaultInterval))
	}
	if c.Batch < 0 {
		errs = append(errs, fmt.Errorf("retention: batch %d: use at least 1, or 0 for the default (%d)", c.Batch, DefaultBatch))
	}
	return errors.Join(errs...)
}
