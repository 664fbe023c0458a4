package consumer_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/dev/embedsim"
)

// With a fifth of all requests answered 429 at random, every chunk is
// stored and none parked, and no batch goes back to the queue: each 429
// is waited out in process, after its Retry-After, the batch keeping its
// place.
func TestRateLimitStormStoresEverythingInPlace(t *testing.T) {
	t.Parallel()
	o := options{sim: embedsim.Config{Seed: 7, Faults: embedsim.Faults{Rate429: 0.2, RetryAfterSeconds: 1}}, batchSize: 4}
	b := setup(t, o)
	b.startConsumer(o)
	docs := map[string][]byte{}
	for i := range 160 {
		docs[fmt.Sprintf("d%03d.txt", i)] = fmt.Appendf(nil, "document %d on tidal flats and their birds", i)
	}
	b.produce("stormy", docs)
	b.waitSettled(90 * time.Second)

	if n := b.count(`SELECT count(*) FROM chunk_embeddings`); n != 160 {
		t.Errorf("%d chunks stored, want 160", n)
	}
	if n := b.count(`SELECT count(*) FROM outbox`); n != 0 {
		t.Errorf("%d chunks parked, want none", n)
	}
	if n := b.sim.Counts().ByStatus["429"]; n == 0 {
		t.Fatal("embed-sim answered no 429: the storm did not happen")
	}
	if v, _ := b.metricValue("sluice_consumer_messages_total", "workers"); v == 0 {
		t.Fatal("no message settled on the workers durable")
	}
	if n := b.count(`SELECT count(*) FROM ingest_manifest WHERE attempts > 1`); n != 0 {
		t.Errorf("%d chunks were delivered more than once: a 429 sent their batch back to the queue", n)
	}
}
