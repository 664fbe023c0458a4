package wait

import (
	"context"
	"time"
)

// Sleep waits d, or less when ctx ends or wake (which may be nil)
// receives. It reports whether ctx is still live: false means the caller
// should stop.
func Sleep(ctx context.Context, d time.Duration, wake <-chan struct{}) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
	case <-wake:
	}
	return true
}
