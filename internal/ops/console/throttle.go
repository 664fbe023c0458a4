package console

import (
	"sync"
	"time"
)

// Login backoff: after each failed secret a client waits twice as long as
// after the one before, from firstBackoff up to maxBackoff, before it may
// try again. A success clears it.
const (
	firstBackoff = time.Second
	maxBackoff   = 5 * time.Minute
	// maxThrottled bounds the clients remembered; beyond it the one
	// whose wait ended longest ago is forgotten.
	maxThrottled = 10000
)

// throttle is the per-client login backoff.
type throttle struct {
	mu  sync.Mutex
	now func() time.Time
	m   map[string]backoff
}

// backoff is one client's failures and the end of its wait.
type backoff struct {
	failures int
	until    time.Time
}

func newThrottle(now func() time.Time) *throttle {
	return &throttle{now: now, m: map[string]backoff{}}
}

// wait is how long a client waits after its failures-th failure.
func wait(failures int) time.Duration {
	d := firstBackoff
	for i := 1; i < failures && d < maxBackoff; i++ {
		d *= 2
	}
	return min(d, maxBackoff)
}

// allowed reports whether client may try a secret now.
func (t *throttle) allowed(client string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	b, ok := t.m[client]
	return !ok || !t.now().Before(b.until)
}

// retryAfter is how long client still waits.
func (t *throttle) retryAfter(client string) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	return max(t.m[client].until.Sub(t.now()), 0)
}

func (t *throttle) failed(client string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	b, ok := t.m[client]
	if !ok {
		evictOldest(t.m, maxThrottled, func(v backoff) time.Time { return v.until })
	}
	b.failures++
	b.until = t.now().Add(wait(b.failures))
	t.m[client] = b
}

func (t *throttle) succeeded(client string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.m, client)
}
