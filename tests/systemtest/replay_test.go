package systemtest

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/sluicehq/sluice/internal/dev/embedsim"
	"github.com/sluicehq/sluice/internal/dev/testenv"
	"github.com/sluicehq/sluice/internal/failure/replay"
	"github.com/sluicehq/sluice/internal/ingest/pipeline"
	"github.com/sluicehq/sluice/internal/platform/broker"
	"github.com/sluicehq/sluice/internal/platform/natsauth"
	"github.com/sluicehq/sluice/internal/provider/embedder"
	"github.com/sluicehq/sluice/internal/store/runs"
)

// noBreaker keeps the breaker shut so that an outage burns deliveries:
// these tests want chunks parked as transient_exhausted.
var noBreaker = embedder.ResilientConfig{MaxRetries: -1, FailureThreshold: 100000}

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
	if n := s.count(`SELECT count(*) FROM dead_letters WHERE replayed_at IS NOT NULL`); n != 0 {
		t.Fatalf("a dry run marked %d dead letters", n)
	}
	// The dry run is on the audit trail, with who asked and what it saw.
	if n := s.count(`SELECT count(*) FROM replay_audit WHERE action = 'dry_run' AND dry_run AND requested_by = 'cli:ops'
		AND selected = 6 AND dispatched = 0 AND scope->>'error_class' = 'bad_request'`); n != 1 || s.count(`SELECT count(*) FROM replay_audit`) != 1 {
		t.Fatalf("%d dry-run audit rows by cli:ops; want exactly 1 row", n)
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
	if err := s.db.Pool.QueryRow(context.Background(), `SELECT sum(selected), sum(dispatched) FROM replay_audit WHERE action = 'replay'`).Scan(&selected, &dispatched); err != nil {
		t.Fatal(err)
	}
	if selected != 6 || dispatched != 6 {
		t.Errorf("audit: selected %d dispatched %d, want 6 and 6", selected, dispatched)
	}
	entries := s.audit("--action", "replay")
	if len(entries) != 3 || entries[0].Selected != 0 || entries[1].Stored != 2 || entries[2].Stored != 4 || entries[2].RequestedBy != "cli:ops" {
		t.Errorf("dlq audit --action replay: %+v; want three replays by cli:ops, newest first, storing 0, 2 and 4", entries)
	}
	code, out, errOut = s.sluice("dlq", "audit")
	if code != 0 || !strings.Contains(out, "dry_run") || !strings.Contains(out, "provider fixed") || !strings.Contains(out, "STORED") {
		t.Errorf("dlq audit table: code %d\n%s%s", code, out, errOut)
	}
	if code, _, errOut := s.sluice("dlq", "audit", "--action", "delete"); code != 2 || !strings.Contains(errOut, "dry_run") {
		t.Errorf("dlq audit --action delete: code %d %s; want a usage error naming the actions", code, errOut)
	}
}

// audit runs `sluice dlq audit --json` with args.
func (s *system) audit(args ...string) []replay.AuditEntry {
	s.t.Helper()
	code, out, errOut := s.sluice(append([]string{"dlq", "audit", "--json"}, args...)...)
	if code != 0 {
		s.t.Fatalf("dlq audit: code %d %s", code, errOut)
	}
	var list struct {
		Entries []replay.AuditEntry `json:"entries"`
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		s.t.Fatalf("dlq audit --json: %v\n%s", err, out)
	}
	return list.Entries
}

// A dead letter that fails again after a replay is not replayed again
// unless asked: the next replay excludes it and says so, the audit counts
// it as parked again, and --include-replayed takes it.
func TestReplayedAgainOnlyWhenAsked(t *testing.T) {
	t.Parallel()
	s := newSystem(t, testenv.DefaultBackend, embedsim.Config{Faults: embedsim.Faults{Poison: []embedsim.PoisonRule{{Match: "stubborn", Kind: embedsim.PoisonInvalidInput}}}},
		pipeline.Config{})
	s.startAll(noBreaker)
	s.produce("stub", docs("stubborn", 2))
	s.eventually(20*time.Second, "two quarantined dead letters", func() bool {
		return s.count(`SELECT count(*) FROM dead_letters WHERE error_class = 'bad_request'`) == 2
	})
	if code, out, errOut := s.sluice("dlq", "replay", "--source", "stub", "--execute", "--reason", "try again", "--rate", "10/s"); code != 0 || !strings.Contains(out, "dispatched 2") {
		t.Fatalf("first replay: code %d\n%s%s", code, out, errOut)
	}
	s.eventually(20*time.Second, "both parked again by the replay", func() bool {
		return s.count(`SELECT count(*) FROM dead_letters WHERE replay_gen = 1 AND replayed_at < last_failed_at`) == 2
	})
	if e := s.audit("--action", "replay"); len(e) != 1 || e[0].ParkedAgain != 2 || e[0].Stored != 0 || e[0].InFlight != 0 {
		t.Errorf("audit of the failed replay: %+v; want 2 parked again", e)
	}
	code, out, _ := s.sluice("dlq", "replay", "--source", "stub", "--execute", "--reason", "again")
	if code != 0 || !strings.Contains(out, "selected 0") || !strings.Contains(out, "excluded 2 already replayed once") {
		t.Fatalf("replay of replayed rows without --include-replayed: code %d\n%s", code, out)
	}
	code, out, _ = s.sluice("dlq", "replay", "--source", "stub", "--include-replayed")
	if code != 0 || !strings.Contains(out, "selected 2") {
		t.Fatalf("dry run with --include-replayed: code %d\n%s", code, out)
	}
	if code, _, errOut := s.sluice("dlq", "replay", "--source", "stub", "--rate", "fast"); code != 2 || !strings.Contains(errOut, "--rate") {
		t.Errorf("--rate fast: code %d %s; want a usage error", code, errOut)
	}
}

// Pausing holds operator and automatic replays without touching live
// ingestion or triage: chunks parked by an outage stay parked while
// paused (the replayer is never handed one), and resuming stores them.
func TestPauseAndResumeReplay(t *testing.T) {
	t.Parallel()
	testenv.ForEachBackend(t, testPauseAndResumeReplay)
}

func testPauseAndResumeReplay(t *testing.T, backend testenv.Backend) {
	s := newSystem(t, backend, embedsim.Config{}, pipeline.Config{MaxDeliveries: 2, AmbiguousRetries: 1, ParkRetryDelay: 50 * time.Millisecond})
	info := func(stream, name string) *jetstream.ConsumerInfo {
		c, err := s.js.Consumer(context.Background(), stream, name)
		if err != nil {
			t.Fatal(err)
		}
		i, err := c.Info(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return i
	}
	// A toggle without a reason is refused before it changes anything.
	if code, _, errOut := s.sluice("dlq", "pause"); code != 2 || !strings.Contains(errOut, "--reason") {
		t.Fatalf("pause without --reason: exit %d %s; want a usage error naming --reason", code, errOut)
	}
	if info(broker.IngestStream, broker.ReplayConsumer).Paused {
		t.Fatal("a pause without a reason paused the replay durable")
	}
	if code, _, errOut := s.sluice("dlq", "pause", "--reason", "provider is shaky"); code != 0 {
		t.Fatalf("pause: %d %s", code, errOut)
	}
	if !info(broker.IngestStream, broker.ReplayConsumer).Paused || info(broker.IngestStream, broker.WorkersConsumer).Paused {
		t.Fatal("pause must pause replay and leave live ingestion alone")
	}
	if !info(broker.DLQStream, broker.ReplayerConsumer).Paused || info(broker.DLQStream, broker.TriageConsumer).Paused {
		t.Fatal("pause must pause automatic replays (the replayer durable) and leave triage alone")
	}
	s.sim.SetOutage(time.Now().Add(-time.Second), time.Now().Add(time.Hour))
	s.startAll(noBreaker)
	s.produce("paused", docs("p", 10))
	s.eventually(30*time.Second, "every chunk parked by the outage and triaged", func() bool {
		return s.count(`SELECT count(*) FROM dead_letters WHERE error_class = 'transient_exhausted'`) == 10
	})
	s.sim.SetOutage(time.Time{}, time.Time{})
	// Triage saw every dead letter, so the replayer's durable holds them
	// too; paused, it has handed out none.
	if r := info(broker.DLQStream, broker.ReplayerConsumer); r.NumPending != 10 || r.Delivered.Consumer != 0 {
		t.Fatalf("paused replayer: %d pending, %d delivered; want 10 and 0", r.NumPending, r.Delivered.Consumer)
	}
	if n := s.count(`SELECT count(*) FROM chunk_embeddings`); n != 0 {
		t.Fatalf("%d chunks stored while replays were paused", n)
	}
	if code, _, errOut := s.sluice("dlq", "resume", "--reason", "provider is back"); code != 0 {
		t.Fatalf("resume: %d %s", code, errOut)
	}
	if n := s.count(`SELECT count(*) FROM replay_audit WHERE (action, reason) IN (('pause', 'provider is shaky'), ('resume', 'provider is back')) AND requested_by LIKE 'cli%'`); n != 2 {
		t.Fatalf("%d audit rows for the CLI's pause and resume; want 2, with their reasons", n)
	}
	if info(broker.IngestStream, broker.ReplayConsumer).Paused || info(broker.DLQStream, broker.ReplayerConsumer).Paused {
		t.Fatal("replays still paused after resume")
	}
	s.eventually(30*time.Second, "the automatic replayer to store every parked chunk", func() bool {
		return s.count(`SELECT count(*) FROM chunk_embeddings`) == 10 &&
			s.count(`SELECT count(*) FROM dead_letters WHERE resolved_at IS NULL`) == 0
	})
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
