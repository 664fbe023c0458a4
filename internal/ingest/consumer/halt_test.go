package consumer_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/sluicehq/sluice/internal/content/chunk"
	"github.com/sluicehq/sluice/internal/content/corpus"
	"github.com/sluicehq/sluice/internal/dev/embedsim"
	"github.com/sluicehq/sluice/internal/ingest/pipeline"
	"github.com/sluicehq/sluice/internal/ingest/producer"
	"github.com/sluicehq/sluice/internal/provider/embedder"
	"github.com/sluicehq/sluice/internal/store/runs"
)

// poisonedCorpus writes n one-chunk documents, 40% of them poison, named
// with prefix so that each call makes new documents.
func poisonedCorpus(t *testing.T, prefix string, n int) string {
	t.Helper()
	dir := t.TempDir()
	for i := range n {
		text := fmt.Sprintf("%s document %d about harbour tides", prefix, i)
		if i%5 < 2 {
			text += " poison-marker"
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("%s-%03d.txt", prefix, i)), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// produceUntilHalted runs the producer over dir, ten documents a batch;
// after the hundredth document it calls atHundred, when not nil, and
// waits until the run is halted, so that what the producer does next is
// the behaviour under test.
func (b *bundle) produceUntilHalted(source, dir string, atHundred func()) producer.Summary {
	t := b.t
	t.Helper()
	r, err := corpus.NewReader(corpus.Config{Inputs: []string{dir}})
	if err != nil {
		t.Fatal(err)
	}
	p, err := producer.New(producer.Config{SourceID: source, BatchDocs: 10, Chunk: chunk.Config{Size: 400, Unit: chunk.UnitChars},
		FullStreamWait: 50 * time.Millisecond}, b.db.Pool, b.js, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	p.Progress = func(sum producer.Summary) {
		if sum.Seen == 100 {
			if atHundred != nil {
				atHundred()
			}
			b.eventually(30*time.Second, "the run to halt", func() bool { return b.runStatus(p.RunID()) == runs.Halted })
		}
	}
	sum, err := p.Run(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	return sum
}

func (b *bundle) runStatus(runID string) runs.Status {
	st, _, err := runs.Get(context.Background(), b.db.Pool, runID)
	if err != nil {
		b.t.Fatal(err)
	}
	return st
}

func (b *bundle) runCount(runID, status string) int {
	return b.count(`SELECT count(*) FROM ingest_manifest WHERE run_id = $1 AND status = $2`, runID, status)
}

// haltedGauge reads sluice_runs_halted for source, as Prometheus would
// scrape it.
func (b *bundle) haltedGauge(source string) float64 {
	reg := prometheus.NewRegistry()
	reg.MustRegister(runs.NewHaltedCollector(b.db.Pool))
	families, err := reg.Gather()
	if err != nil {
		b.t.Fatal(err)
	}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			if m.GetLabel()[0].GetValue() == source {
				return m.GetGauge().GetValue()
			}
		}
	}
	return 0
}

// A source whose runs are 40% poison: each run halts once its minimum of
// chunks has settled, its producer stops publishing, the alert's metric
// is raised, and held chunks wait without spending their delivery budget.
// Resume lets the first run finish; cancel parks the second run's owed
// chunks as run_cancelled with the operator's reason.
func TestPoisonedRunHaltsThenResumeAndCancelDoWhatTheySay(t *testing.T) {
	t.Parallel()
	table := loadPolicy(t, `
sources:
  poisoned:
    halt: {rejection_ratio: 0.3, min_chunks: 20}
`)
	o := options{
		sim:       embedsim.Config{Faults: embedsim.Faults{Poison: []embedsim.PoisonRule{{Match: "poison-marker", Kind: embedsim.PoisonInvalidInput}}}},
		resilient: embedder.ResilientConfig{MaxRetries: -1},
		pipe:      pipeline.Config{HoldDelay: 100 * time.Millisecond},
		sources:   table,
	}
	b := setup(t, o)
	ctx := context.Background()

	// The consumer starts once the first hundred are published, so that
	// the run cannot halt before the producer gets there, however the
	// two are scheduled.
	sum := b.produceUntilHalted("poisoned", poisonedCorpus(t, "first", 200), func() { b.startConsumer(o) })
	run := sum.RunID
	if !strings.HasPrefix(sum.Stopped, "halted: rejection ratio") || sum.Seen != 100 || sum.Chunks != 100 {
		t.Fatalf("producer: stopped %q after %d documents, %d chunks published; want halted after exactly the 100 it had published", sum.Stopped, sum.Seen, sum.Chunks)
	}
	if settled := b.runCount(run, "stored") + b.runCount(run, "parked"); settled < 20 || settled >= 100 {
		t.Errorf("%d chunks settled when the run halted; want at least the minimum of 20 and some held", settled)
	}
	if v, _ := b.metricValue("sluice_runs_halted_total", "poisoned"); v != 1 {
		t.Errorf("sluice_runs_halted_total{source=poisoned} = %v, want 1", v)
	}
	if g := b.haltedGauge("poisoned"); g != 1 {
		t.Errorf("sluice_runs_halted{source=poisoned} = %v, want 1 (the alert's series)", g)
	}
	// Held chunks come back every HOLD_DELAY; once one has been delivered
	// more often than the delivery cap (5) and is still pending, holding
	// demonstrably costs nothing.
	b.eventually(30*time.Second, "a chunk held more often than the delivery cap", func() bool {
		return b.count(`SELECT coalesce(max(held_deliveries), 0) FROM ingest_manifest WHERE run_id = $1 AND status = 'pending'`, run) > 6
	})
	if n := b.count(`SELECT count(*) FROM ingest_manifest WHERE run_id = $1 AND last_error_class IN ('transient_exhausted', 'delivery_cap')`, run); n != 0 {
		t.Errorf("%d held chunks were charged for being held", n)
	}

	if err := runs.Resume(ctx, b.db.Pool, run); err != nil {
		t.Fatal(err)
	}
	b.waitSettled(60 * time.Second)
	if stored, parked := b.runCount(run, "stored"), b.runCount(run, "parked"); stored != 60 || parked != 40 {
		t.Errorf("after resume: %d stored, %d parked; want 60 and 40", stored, parked)
	}
	if err := runs.Refresh(ctx, b.db.Pool); err != nil {
		t.Fatal(err)
	}
	if st := b.runStatus(run); st != runs.CompletedWithFailures {
		t.Errorf("resumed run is %s, want completed_with_failures (not halted again)", st)
	}
	if g := b.haltedGauge("poisoned"); g != 0 {
		t.Errorf("sluice_runs_halted after resume = %v, want the series gone", g)
	}

	second := b.produceUntilHalted("poisoned", poisonedCorpus(t, "second", 150), nil).RunID
	pending := b.runCount(second, "pending")
	if err := runs.Cancel(ctx, b.db.Pool, second, "mapping changed upstream"); err != nil {
		t.Fatal(err)
	}
	b.waitSettled(60 * time.Second)
	q := `SELECT count(*) FROM outbox WHERE payload->>'run_id' = $1 AND payload->>'error_class' = 'run_cancelled'
	      AND payload->>'error_detail' LIKE '%mapping changed upstream%'`
	if n := b.count(q, second); n != pending || pending == 0 {
		t.Errorf("%d dead letters run_cancelled with the reason, want the %d chunks held at cancel", n, pending)
	}
	if err := runs.Refresh(ctx, b.db.Pool); err != nil {
		t.Fatal(err)
	}
	if st := b.runStatus(second); st != runs.Cancelled {
		t.Errorf("cancelled run is %s", st)
	}
	if err := runs.Resume(ctx, b.db.Pool, second); err == nil {
		t.Error("a cancelled run was resumed")
	}
}
