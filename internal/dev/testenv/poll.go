package testenv

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/dev/localenv"
)

// Eventually polls cond until it holds, and fails t if timeout passes
// first; what names the awaited condition in the failure.
func Eventually(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	if !localenv.Poll(timeout, cond) {
		t.Fatalf("timed out after %s waiting for %s", timeout, what)
	}
}
