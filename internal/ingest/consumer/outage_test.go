package consumer_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/ingest/pipeline"
	"github.com/sluicehq/sluice/internal/provider/embedder"
)

// An embedder outage of thirty breaker periods, at the default delivery
// cap, parks nothing: deliveries refused by the open breaker, and the
// breaker's probes, are not the chunks' to pay for. Once the embedder is
// back every chunk is stored, once.
func TestLongOutageSpendsNoDeliveryBudget(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		resilient embedder.ResilientConfig
	}{
		{"in-process retries", embedder.ResilientConfig{BreakerDelay: 500 * time.Millisecond}},
		{"no in-process retries", embedder.ResilientConfig{MaxRetries: -1, FailureThreshold: 2, BreakerDelay: 500 * time.Millisecond}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			o := options{resilient: tc.resilient, batchSize: 4}
			b := setup(t, o)
			outage := 30 * tc.resilient.BreakerDelay
			start := time.Now()
			b.sim.SetOutage(start, start.Add(outage))
			emb := b.startConsumer(o)
			const chunks = 6
			docs := map[string][]byte{}
			for i := range chunks {
				docs[fmt.Sprintf("d%d.txt", i)] = fmt.Appendf(nil, "long outage document %d", i)
			}
			b.produce("outage", docs)
			b.eventually(outage, "the breaker to open", func() bool { return emb.State() == embedder.BreakerOpen })
			opened := time.Now()
			b.waitSettled(outage + 30*time.Second)

			if n := b.count(`SELECT count(*) FROM ingest_manifest WHERE status = 'parked'`); n != 0 {
				t.Errorf("%d chunks parked by an outage the system rode out", n)
			}
			if n := b.count(`SELECT count(*) FROM outbox`); n != 0 {
				t.Errorf("%d dead letters for an outage", n)
			}
			if n := b.count(`SELECT count(*) FROM chunk_embeddings`); n != chunks {
				t.Errorf("stored %d of %d after the outage", n, chunks)
			}
			// One delivery went to the requests that opened the breaker,
			// one to store the chunk: none to the outage itself.
			if n := b.count(`SELECT max(attempts) FROM ingest_manifest`); n > 2 {
				t.Errorf("a chunk spent %d deliveries of its %d", n, pipeline.DefaultMaxDeliveries)
			}
			probes := 0
			for _, r := range b.sim.Requests() {
				if r.Time.Before(opened) || !r.Time.Before(start.Add(outage)) {
					continue
				}
				if len(r.Texts) != 1 || r.Texts[0] != embedder.ProbeInput {
					t.Fatalf("a request carried chunks %q while the breaker was open", r.Texts)
				}
				probes++
			}
			if periods := int(outage / tc.resilient.BreakerDelay); probes < periods/2 || probes > periods+2 {
				t.Errorf("%d probes during an outage of %d breaker periods, want about one a period", probes, periods)
			}
			if n := b.sim.Counts().ByStatus["503"]; n == 0 {
				t.Fatal("embed-sim answered no 503: the outage did not happen")
			}
		})
	}
}
