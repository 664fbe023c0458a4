package systemtest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/sluicehq/sluice/internal/broker"
	"github.com/sluicehq/sluice/internal/embedder"
	"github.com/sluicehq/sluice/internal/embedsim"
	"github.com/sluicehq/sluice/internal/natsauth"
	"github.com/sluicehq/sluice/internal/pipeline"
	"github.com/sluicehq/sluice/internal/runs"
	"github.com/sluicehq/sluice/internal/testenv"
)

// noBreaker keeps the breaker shut so that an outage burns deliveries:
// these tests want chunks parked as transient_exhausted.
var noBreaker = embedder.ResilientOptions{MaxRetries: -1, FailureThreshold: 100000}

// An outage longer than the delivery cap parks chunks as
// transient_exhausted; after recovery the replayer stores every one, the
// dead letters are resolved, nothing is duplicated and reconcile passes.
func TestTransientExhaustedIsReplayedAfterRecovery(t *testing.T) {
	t.Parallel()
	testenv.ForEachBackend(t, testTransientExhaustedIsReplayedAfterRecovery)
}

func testTransientExhaustedIsReplayedAfterRecovery(t *testing.T, backend testenv.Backend) {
	s := newSystem(t, backend, embedsim.Config{}, pipeline.Config{MaxDeliveries: 2, AmbiguousRetries: 1, ParkRetryDelay: 3 * time.Second})
	// The outage lasts until it has parked something, however long a busy
	// machine takes to get the first chunks to the embedder.
	s.sim.SetOutage(time.Now().Add(-time.Second), time.Now().Add(time.Hour))
	s.startAll(noBreaker)
	s.produce("outage", docs("o", 30))
	s.eventually(20*time.Second, "chunks parked by the outage", func() bool {
		return s.count(`SELECT count(*) FROM dead_letters WHERE error_class = 'transient_exhausted'`) > 0
	})
	s.sim.SetOutage(time.Time{}, time.Time{})
	parked := s.count(`SELECT count(*) FROM dead_letters WHERE error_class = 'transient_exhausted'`)
	s.eventually(30*time.Second, "every chunk stored", func() bool {
		return s.count(`SELECT count(*) FROM chunk_embeddings`) == 30
	})
	s.eventually(10*time.Second, "dead letters resolved", func() bool {
		return s.count(`SELECT count(*) FROM dead_letters WHERE resolved_at IS NULL`) == 0
	})
	if n := s.count(`SELECT count(*) FROM dead_letters WHERE resolved_at IS NOT NULL`); n < parked {
		t.Errorf("%d resolved dead letters, %d were parked", n, parked)
	}
	if n := s.count(`SELECT count(*) FROM (SELECT doc_id, chunk_index FROM chunk_embeddings GROUP BY 1, 2 HAVING count(*) > 1) d`); n != 0 {
		t.Errorf("%d duplicated chunks", n)
	}
	if code, out, errOut := s.sluice("reconcile"); code != 0 {
		t.Fatalf("reconcile exit %d:\n%s%s", code, out, errOut)
	}
	if err := runs.Refresh(context.Background(), s.db.Pool); err != nil {
		t.Fatal(err)
	}
	var status string
	if err := s.db.Pool.QueryRow(context.Background(), `SELECT status FROM ingest_runs`).Scan(&status); err != nil || status != "completed" {
		t.Errorf("run status %q (%v), want completed", status, err)
	}
	if n := s.count(`SELECT count(*) FROM documents WHERE status <> 'ready'`); n != 0 {
		t.Errorf("%d documents not ready after the replays", n)
	}
}

// A chunk that fails on every replay is quarantined as replay_exhausted
// after max_replays generations, and then left alone.
func TestReplayExhaustedStops(t *testing.T) {
	t.Parallel()
	testenv.ForEachBackend(t, testReplayExhaustedStops)
}

func testReplayExhaustedStops(t *testing.T, backend testenv.Backend) {
	s := newSystem(t, backend, embedsim.Config{Faults: embedsim.Faults{Sequences: []embedsim.SequenceRule{{Match: "doomed", Sequence: "503"}}}},
		pipeline.Config{MaxDeliveries: 2, AmbiguousRetries: 1, MaxReplays: 3, ParkRetryDelay: 50 * time.Millisecond})
	s.startAll(noBreaker)
	text := "a doomed chunk the provider never accepts"
	s.produce("doom", map[string]string{"doomed.txt": text})
	s.eventually(30*time.Second, "replay_exhausted", func() bool {
		return s.count(`SELECT count(*) FROM dead_letters WHERE error_class = 'replay_exhausted'`) == 1
	})
	var disposition string
	var gen int
	if err := s.db.Pool.QueryRow(context.Background(), `SELECT disposition, replay_gen FROM dead_letters`).Scan(&disposition, &gen); err != nil {
		t.Fatal(err)
	}
	if disposition != "quarantine" || gen != 3 {
		t.Errorf("disposition %s gen %d; want quarantine after generation 3", disposition, gen)
	}
	// Two deliveries, then one attempt per replay generation: five in all.
	if n := s.sim.SeenCount(text); n != 5 {
		t.Errorf("embedder saw the chunk %d times, want 5", n)
	}
	if n := s.count(`SELECT count(*) FROM outbox`); n != 4 {
		t.Errorf("%d dead letters written, want 4 (one per generation)", n)
	}
}

// Operator replay: a dry run changes nothing, --execute dispatches at most
// --limit and marks before dispatch, and the same replay again selects 0.
func TestOperatorReplay(t *testing.T) {
	t.Parallel()
	testenv.ForEachBackend(t, testOperatorReplay)
}

func testOperatorReplay(t *testing.T, backend testenv.Backend) {
	s := newSystem(t, backend, embedsim.Config{Faults: embedsim.Faults{Poison: []embedsim.PoisonRule{{Match: "fixable", Kind: embedsim.PoisonInvalidInput}}}},
		pipeline.Config{})
	s.startAll(noBreaker)
	s.produce("ops", docs("fixable", 6))
	s.eventually(20*time.Second, "six quarantined dead letters", func() bool {
		return s.count(`SELECT count(*) FROM dead_letters WHERE error_class = 'bad_request'`) == 6
	})

	// The provider is fixed; now the operator replays.
	if err := s.sim.SetFaults(embedsim.Faults{}); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := s.sluice("dlq", "replay", "--error-class", "bad_request")
	if code != 0 || !strings.Contains(out, "DRY RUN") || !strings.Contains(out, "selected 6") {
		t.Fatalf("dry run: code %d\n%s%s", code, out, errOut)
	}
	if n := s.count(`SELECT count(*) FROM dead_letters WHERE replayed_at IS NOT NULL`) + s.count(`SELECT count(*) FROM replay_audit`); n != 0 {
		t.Fatal("a dry run changed the database")
	}
	if code, _, errOut := s.sluice("dlq", "replay", "--error-class", "bad_request", "--execute"); code != 2 || !strings.Contains(errOut, "--reason") {
		t.Fatalf("--execute without --reason: code %d %s", code, errOut)
	}
	if code, _, errOut := s.sluice("dlq", "replay", "--execute", "--reason", "x"); code != 2 || !strings.Contains(errOut, "scope") {
		t.Fatalf("replay without a scope: code %d %s", code, errOut)
	}

	code, out, errOut = s.sluice("dlq", "replay", "--error-class", "bad_request", "--limit", "4", "--execute", "--reason", "provider fixed")
	if code != 0 || !strings.Contains(out, "dispatched 4") {
		t.Fatalf("execute: code %d\n%s%s", code, out, errOut)
	}
	if n := s.count(`SELECT count(*) FROM dead_letters WHERE replayed_at IS NOT NULL`); n != 4 {
		t.Fatalf("%d marked, want 4", n)
	}
	s.eventually(20*time.Second, "four replayed chunks stored", func() bool {
		return s.count(`SELECT count(*) FROM chunk_embeddings`) == 4
	})
	code, out, _ = s.sluice("dlq", "replay", "--error-class", "bad_request", "--limit", "10", "--execute", "--reason", "the rest")
	if code != 0 || !strings.Contains(out, "selected 2") {
		t.Fatalf("second replay: code %d\n%s", code, out)
	}
	code, out, _ = s.sluice("dlq", "replay", "--error-class", "bad_request", "--limit", "10", "--execute", "--reason", "the rest")
	if code != 0 || !strings.Contains(out, "selected 0") {
		t.Fatalf("identical replay again: code %d\n%s", code, out)
	}
	s.eventually(20*time.Second, "all six stored", func() bool {
		return s.count(`SELECT count(*) FROM chunk_embeddings`) == 6 &&
			s.count(`SELECT count(*) FROM dead_letters WHERE resolved_at IS NULL`) == 0
	})
	var selected, dispatched int
	if err := s.db.Pool.QueryRow(context.Background(), `SELECT sum(selected), sum(dispatched) FROM replay_audit`).Scan(&selected, &dispatched); err != nil {
		t.Fatal(err)
	}
	if selected != 6 || dispatched != 6 {
		t.Errorf("audit: selected %d dispatched %d, want 6 and 6", selected, dispatched)
	}
}

// Pausing the replay durable holds replays without touching live
// ingestion; resuming lets them through.
func TestPauseAndResumeReplay(t *testing.T) {
	t.Parallel()
	testenv.ForEachBackend(t, testPauseAndResumeReplay)
}

func testPauseAndResumeReplay(t *testing.T, backend testenv.Backend) {
	s := newSystem(t, backend, embedsim.Config{}, pipeline.Config{})
	if code, _, errOut := s.sluice("dlq", "pause"); code != 0 {
		t.Fatalf("pause: %d %s", code, errOut)
	}
	info := func(stream, name string) *jetstream.ConsumerInfo {
		c, err := s.js.Consumer(context.Background(), stream, name)
		if err != nil {
			t.Fatal(err)
		}
		return c.CachedInfo()
	}
	if !info(broker.IngestStream, broker.ReplayConsumer).Paused || info(broker.IngestStream, broker.WorkersConsumer).Paused {
		t.Fatal("pause must pause replay and leave live ingestion alone")
	}
	if !info(broker.DLQStream, broker.ReplayerConsumer).Paused || info(broker.DLQStream, broker.TriageConsumer).Paused {
		t.Fatal("pause must pause automatic replays (the replayer durable) and leave triage alone")
	}
	if code, _, errOut := s.sluice("dlq", "resume"); code != 0 {
		t.Fatalf("resume: %d %s", code, errOut)
	}
	if info(broker.IngestStream, broker.ReplayConsumer).Paused || info(broker.DLQStream, broker.ReplayerConsumer).Paused {
		t.Fatal("replays still paused after resume")
	}
}

// Broker loss: the INGEST stream is deleted in the middle of a run;
// reconcile --redrive rebuilds the owed work from PostgreSQL alone and the
// system converges with every chunk stored once.
func TestBrokerLossRedrive(t *testing.T) {
	t.Parallel()
	testenv.ForEachBackend(t, testBrokerLossRedrive)
}

func testBrokerLossRedrive(t *testing.T, backend testenv.Backend) {
	s := newSystem(t, backend, embedsim.Config{Faults: embedsim.Faults{Latency: embedsim.Latency{Dist: embedsim.LatencyFixed, Value: 50 * time.Millisecond}}},
		pipeline.Config{})
	s.startAll(noBreaker)
	s.produce("loss", docs("l", 200))
	s.eventually(20*time.Second, "some chunks stored", func() bool { return s.count(`SELECT count(*) FROM chunk_embeddings`) > 0 })
	if err := s.js.DeleteStream(context.Background(), broker.IngestStream); err != nil {
		t.Fatal(err)
	}
	pending := s.count(`SELECT count(*) FROM ingest_manifest WHERE status = 'pending'`)
	if pending == 0 {
		t.Fatal("the run finished before the stream was deleted; nothing to redrive")
	}
	// Only the topology owner may declare the lost stream again; the
	// operator's reconcile then rebuilds its work.
	if code, out, errOut := s.sluice("reconcile", "--redrive"); code != 1 || !strings.Contains(errOut, "sluice nats setup") {
		t.Fatalf("reconcile --redrive without INGEST: code %d, want 1 naming sluice nats setup\n%s%s", code, out, errOut)
	}
	if code, out, errOut := s.sluiceAs(natsauth.Owner, "nats", "setup", "--ack-wait", "30s"); code != 0 {
		t.Fatalf("nats setup: code %d\n%s%s", code, out, errOut)
	}
	code, out, errOut := s.sluice("reconcile", "--redrive")
	if code != 0 || !strings.Contains(out, "redriven") {
		t.Fatalf("reconcile --redrive: code %d\n%s%s", code, out, errOut)
	}
	s.eventually(30*time.Second, "every chunk stored", func() bool {
		return s.count(`SELECT count(*) FROM chunk_embeddings`) == 200
	})
	if code, out, _ := s.sluice("reconcile", "--json"); code != 0 || !strings.Contains(out, `"ok": true`) {
		t.Fatalf("reconcile after convergence: code %d\n%s", code, out)
	}
	var dup int
	if err := s.db.Pool.QueryRow(context.Background(), `SELECT count(*) FROM (SELECT 1 FROM chunk_embeddings GROUP BY doc_id, chunk_index HAVING count(*) > 1) d`).Scan(&dup); err != nil || dup != 0 {
		t.Fatalf("duplicates %d (%v)", dup, err)
	}
}
