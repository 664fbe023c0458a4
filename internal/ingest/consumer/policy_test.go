package consumer_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/dev/embedsim"
	"github.com/sluicehq/sluice/internal/platform/policy"
	"github.com/sluicehq/sluice/internal/provider/embedder"
)

// loadPolicy writes doc as a policy file and loads it over the defaults a
// service would take from its flags.
func loadPolicy(t *testing.T, doc string) *policy.Table {
	t.Helper()
	path := filepath.Join(t.TempDir(), "policy.yaml")
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	table, err := policy.Load(path, policy.Settings{MaxDeliveries: 5, AmbiguousRetries: 2, MaxReplays: 3,
		BackoffBase: time.Second, BackoffMax: time.Minute, BreakerFailures: 5, BreakerDelay: 10 * time.Second,
		SoftTimeLimit: time.Minute, HaltMinChunks: policy.DefaultHaltMinChunks,
		PayloadRetention: policy.DefaultPayloadRetention, EscalationRetention: policy.DefaultEscalationRetention}, policy.DefaultRetentionMandate)
	if err != nil {
		t.Fatal(err)
	}
	return table
}

// Two sources whose chunks fail the same way forever park after exactly
// the delivery caps their policy gives them, and no sooner.
func TestPolicyFileSetsEachSourcesDeliveryCap(t *testing.T) {
	t.Parallel()
	table := loadPolicy(t, `
default:
  backoff: {base: 20ms, max: 100ms}
sources:
  short-fuse:
    max_deliveries: 2
    ambiguous_retries: 1
  patient:
    max_deliveries: 6
`)
	o := options{
		sim:       embedsim.Config{Faults: embedsim.Faults{Sequences: []embedsim.SequenceRule{{Match: "always-503", Sequence: "503"}}}},
		resilient: embedder.ResilientConfig{MaxRetries: -1, FailureThreshold: 1000},
		sources:   table,
	}
	b := setup(t, o)
	b.startConsumer(o)
	texts := map[string]string{
		"short-fuse": "always-503 from the short-fuse source",
		"patient":    "always-503 from the patient source",
	}
	for source, text := range texts {
		b.produce(source, map[string][]byte{"doc.txt": []byte(text)})
	}
	b.waitSettled(60 * time.Second)

	for source, want := range map[string]int{"short-fuse": 2, "patient": 6} {
		seen := 0
		for _, r := range b.sim.Requests() {
			for _, in := range r.Texts {
				if in == texts[source] {
					seen++
				}
			}
		}
		if seen != want {
			t.Errorf("%s: the embedder saw its chunk %d times, want %d", source, seen, want)
		}
		q := `SELECT (payload->>'attempts')::int FROM outbox WHERE payload->>'source_id' = $1 AND payload->>'error_class' = 'transient_exhausted'`
		if got := b.count(q, source); got != want {
			t.Errorf("%s: parked as transient_exhausted after %d attempts, want %d", source, got, want)
		}
	}
}
