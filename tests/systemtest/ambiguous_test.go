package systemtest

import (
	"context"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/dev/embedsim"
	"github.com/sluicehq/sluice/internal/dev/testenv"
	"github.com/sluicehq/sluice/internal/ingest/pipeline"
	"github.com/sluicehq/sluice/pkg/classify"
	"github.com/sluicehq/sluice/pkg/messages"
)

// An embedder reply the classifier does not recognise (here a 300, which
// no embeddings API sends) is ambiguous: the consumer retries it the
// default twice, then parks it as ambiguous_exhausted after three
// attempts. The chunks sharing its requests are not parked with it: the
// request that would park them is bisected first, so they are stored.
func TestAmbiguousErrorRetriedTwiceThenParked(t *testing.T) {
	t.Parallel()
	s := newSystem(t, testenv.DefaultBackend, embedsim.Config{Faults: embedsim.Faults{
		Sequences: []embedsim.SequenceRule{{Match: "puzzling", Sequence: "300"}}}}, pipeline.Config{})
	s.startAll(noBreaker)
	text := "a puzzling chunk the provider answers with a 300"
	s.produce("amb", map[string]string{"puzzling.txt": text, "plain-1.txt": "a plain chunk about weirs",
		"plain-2.txt": "a plain chunk about sluice gates", "plain-3.txt": "a plain chunk about mill races"})
	s.eventually(90*time.Second, "the puzzling chunk parked and triaged", func() bool {
		return s.count(`SELECT count(*) FROM dead_letters`) == 1
	})
	var disposition, class, code string
	var attempts int
	if err := s.db.Pool.QueryRow(context.Background(),
		`SELECT disposition, error_class, coalesce(error_code, ''), attempts FROM dead_letters`).Scan(&disposition, &class, &code, &attempts); err != nil {
		t.Fatal(err)
	}
	if disposition != messages.DispositionAmbiguous || class != classify.ClassAmbiguousExhausted || attempts != pipeline.DefaultAmbiguousRetries+1 {
		t.Errorf("dead letter %s/%s after %d attempts (code %s); want ambiguous/ambiguous_exhausted after %d",
			disposition, class, attempts, code, pipeline.DefaultAmbiguousRetries+1)
	}
	// Three attempts; when the last shared a request, the bisection sent
	// the chunk again in at most log₂(4) = 2 smaller requests.
	if n, want := s.sim.SeenCount(text), pipeline.DefaultAmbiguousRetries+1; n < want || n > want+2 {
		t.Errorf("embedder saw the chunk %d times; want %d (one attempt and two retries), plus at most 2 while bisecting", n, want)
	}
	if n := s.count(`SELECT count(*) FROM ingest_manifest WHERE status = 'parked' AND last_error_class = $1 AND attempts = 3`, classify.ClassAmbiguousExhausted); n != 1 {
		t.Errorf("%d manifest rows parked as ambiguous_exhausted after 3 attempts; want 1", n)
	}
	s.eventually(10*time.Second, "the plain chunks stored", func() bool {
		return s.count(`SELECT count(*) FROM chunk_embeddings`) == 3
	})
	if n := s.count(`SELECT count(*) FROM ingest_manifest WHERE status = 'parked'`); n != 1 {
		t.Errorf("%d chunks parked; want only the puzzling one", n)
	}
}
