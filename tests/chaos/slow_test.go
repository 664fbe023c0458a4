//go:build chaos

// The slow provider's scenario is built only with -tags chaos (`make
// chaos`): it waits on two 45 s answers, longer than the rest of the
// short suite's single-fault tests together.

package chaos_test

import (
	"testing"
	"time"
)

// An embedder that answers in 45 s under EMBEDDER_TIMEOUT=60s gets its
// chunks stored: no hidden per-batch deadline cuts it off.
func TestSlowEmbedderWithinTimeoutIsStored(t *testing.T) {
	t.Parallel()
	f := newFleet(t, fleetOptions{sim: []string{"--latency", "fixed:45s"}, env: []string{"EMBEDDER_TIMEOUT=60s"}})
	f.oneOfEach()
	dir := f.writeCorpus("slow", 2, 10)
	f.runProducer("slow", dir)
	v := f.converge(3*time.Minute, 2)
	if v.parked != 0 || v.stored == 0 {
		t.Errorf("%d stored, %d parked; want every chunk stored", v.stored, v.parked)
	}
}
