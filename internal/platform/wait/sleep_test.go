package wait_test

import (
	"context"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/platform/wait"
)

func TestSleep(t *testing.T) {
	t.Parallel()
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	woken := make(chan struct{}, 1)
	woken <- struct{}{}
	tests := []struct {
		name string
		ctx  context.Context
		d    time.Duration
		wake <-chan struct{}
		want bool
	}{
		{name: "full wait", ctx: context.Background(), d: time.Millisecond, want: true},
		{name: "no wait", ctx: context.Background(), want: true},
		{name: "ended context", ctx: ended, d: time.Hour, want: false},
		{name: "ended context, no wait", ctx: ended, want: false},
		{name: "woken", ctx: context.Background(), d: time.Hour, wake: woken, want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			if got := wait.Sleep(tt.ctx, tt.d, tt.wake); got != tt.want {
				t.Fatalf("Sleep = %v, want %v", got, tt.want)
			}
			if elapsed := time.Since(start); elapsed > time.Minute {
				t.Fatalf("Sleep took %s", elapsed)
			}
		})
	}
}
