// Package clocktest is a clock that tests move by hand, for code that
// takes its clock injected (a func() time.Time). Only tests import it.
package clocktest

import (
	"sync"
	"time"
)

// Clock is a settable clock, safe for concurrent use.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// New returns a clock that reads at.
func New(at time.Time) *Clock { return &Clock{now: at} }

// Now is the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}
