package chaos_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/platform/broker"
)

// workersDelivered is how many deliveries the workers durable has made.
func (f *fleet) workersDelivered() uint64 {
	f.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := f.js.Consumer(ctx, broker.IngestStream, broker.WorkersConsumer)
	if err != nil {
		f.t.Fatal(err)
	}
	info, err := c.Info(ctx)
	if err != nil {
		f.t.Fatal(err)
	}
	return info.Delivered.Consumer
}

func (f *fleet) runProducer(source, dir string, extra ...string) string {
	f.t.Helper()
	p := f.produce(source, dir, extra...)
	code, err := p.wait(3 * time.Minute)
	if err != nil || code != 0 {
		f.t.Fatalf("producer exited %d (%v):\n%s", code, err, p.logTail())
	}
	return p.logTail()
}

// A 20-second PostgreSQL outage during live ingest, with default
// settings, converges by itself; while the database is down the
// consumers hold their batches and stop pulling, so deliveries do not
// climb and no delivery budget is spent.
func TestPostgresOutageConverges(t *testing.T) {
	t.Parallel()
	// Enough work for several rounds of every pull loop (6 × 64 chunks a
	// round, 150 ms each), so that the outage lands while chunks are in
	// flight rather than after the first round stored them all.
	f := newFleet(t, fleetOptions{sim: []string{"--latency", "fixed:150ms"}})
	f.services()
	dir := f.writeCorpus("pg", 200, 40)
	f.runProducer("pgout", dir)
	f.eventually(time.Minute, "some chunks stored before the outage", func() bool {
		return f.count(`SELECT count(*) FROM ingest_manifest WHERE status = 'stored'`) > 20
	})
	if pending := f.count(`SELECT count(*) FROM ingest_manifest WHERE status = 'pending'`); pending == 0 {
		t.Fatal("nothing left in flight when the outage began; the test proves nothing")
	} else {
		t.Logf("%d chunks pending when the outage began", pending)
	}
	ctx := context.Background()
	if err := f.pg.StopImmediate(ctx); err != nil {
		t.Fatal(err)
	}
	outage := time.Now()
	// The outage lasts 20 s. Its first 3 s let the batches in flight meet
	// it; deliveries over the remaining 17 s must not move.
	time.Sleep(3 * time.Second)
	before := f.workersDelivered()
	time.Sleep(17 * time.Second)
	after := f.workersDelivered()
	if err := f.pg.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("outage of %s; deliveries during its last 17s: %d", time.Since(outage).Round(time.Second), after-before)
	if after != before {
		t.Errorf("deliveries climbed from %d to %d while PostgreSQL was down", before, after)
	}
	v := f.converge(2*time.Minute, 200)
	if v.parked != 0 {
		t.Errorf("%d chunks parked: a database outage must not spend delivery budgets", v.parked)
	}
}

// A producer killed right after its record transaction commits leaves
// chunks recorded but never published; the outbox-relay's sweeper
// publishes them and they are stored, with no operator action.
func TestProducerKilledAfterRecordIsPublished(t *testing.T) {
	t.Parallel()
	f := newFleet(t, fleetOptions{env: []string{"OWED_GRACE=2s"}})
	f.services()
	dir := f.writeCorpus("crash", 20, 30)
	p := f.produce("crash", dir, "SLUICE_CRASH_POINT=after-record-before-publish")
	if code, err := p.wait(time.Minute); err != nil || code != 137 {
		t.Fatalf("producer exited %d (%v), want the crash point's 137:\n%s", code, err, p.logTail())
	}
	if n := f.count(`SELECT count(*) FROM ingest_manifest WHERE published_at IS NULL`); n == 0 {
		t.Fatal("the crash left nothing unpublished; the test proves nothing")
	}
	f.converge(2*time.Minute, 20)
	if n := f.count(`SELECT count(*) FROM ingest_manifest WHERE published_at IS NULL AND status <> 'superseded'`); n != 0 {
		t.Errorf("%d chunks never confirmed as published", n)
	}
}

// A producer started while nothing listens on NATS's port cannot tell a
// broker that is down from a NATS_URL that names the wrong port: it
// exits non-zero at once, naming NATS_URL, having recorded nothing, so
// that a scheduler runs it again rather than taking its run for done.
// Run again once NATS is back, it ingests everything. (An outage that
// begins after the producer started still leaves its chunks owed for
// the outbox-relay; the network faults of network_test.go cover it.)
func TestProducerWithNATSDownFailsAtOnceAndConvergesWhenRunAgain(t *testing.T) {
	t.Parallel()
	f := newFleet(t, fleetOptions{env: []string{"OWED_GRACE=2s"}})
	f.services()
	ctx := context.Background()
	if err := f.nats.Kill(ctx); err != nil {
		t.Fatal(err)
	}
	dir := f.writeCorpus("down", 15, 30)
	p := f.produce("down", dir)
	start := time.Now()
	code, err := p.wait(time.Minute)
	if err != nil || code == 0 || time.Since(start) > 10*time.Second {
		t.Fatalf("producer with NATS down exited %d (%v) after %s, want a failure at once:\n%s", code, err, time.Since(start), p.logTail())
	}
	if out := p.logTail(); !strings.Contains(out, "NATS_URL ") {
		t.Errorf("producer's failure does not name NATS_URL:\n%s", out)
	}
	if n := f.count(`SELECT count(*) FROM ingest_manifest`); n != 0 {
		t.Errorf("a producer that could not start recorded %d chunks", n)
	}
	if err := f.nats.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	f.runProducer("down", dir)
	f.converge(2*time.Minute, 15)
}

// A one-shot producer exits 0 after its run with its metrics server on.
func TestProducerExitsWithMetricsOn(t *testing.T) {
	t.Parallel()
	f := newFleet(t, fleetOptions{})
	dir := f.writeCorpus("exit", 3, 10)
	p := f.produce("exit", dir) // produce always sets METRICS_ADDR
	if code, err := p.wait(time.Minute); err != nil || code != 0 {
		t.Fatalf("producer with METRICS_ADDR set exited %d (%v):\n%s", code, err, p.logTail())
	}
}
