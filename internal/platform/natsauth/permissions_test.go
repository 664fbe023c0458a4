package natsauth_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/sluicehq/sluice/internal/dev/testenv"
	"github.com/sluicehq/sluice/internal/ingest/publish"
	"github.com/sluicehq/sluice/internal/platform/broker"
	"github.com/sluicehq/sluice/internal/platform/natsauth"
	"github.com/sluicehq/sluice/internal/store/manifest"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// client is one role's connection, with the permission violations the
// server reported to it.
type client struct {
	t  *testing.T
	nc *nats.Conn
	js jetstream.JetStream

	mu         sync.Mutex
	violations []string
}

// testBundle is a server declared by its owner, with the owner's
// JetStream to check what the other roles could not change.
type testBundle struct {
	nats  *testenv.NATS
	owner jetstream.JetStream
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	n, js := testenv.NewJetStream(t, broker.Topology{})
	return &testBundle{nats: n, owner: js}
}

func (b *testBundle) as(t *testing.T, role natsauth.Role) *client {
	t.Helper()
	c := &client{t: t}
	// The inbox prefix broker.Connect gives every Sluice client.
	nc, err := nats.Connect(b.nats.URLFor(role), nats.CustomInboxPrefix(broker.InboxPrefix(string(role))), nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.violations = append(c.violations, err.Error())
	}))
	if err != nil {
		t.Fatalf("connect as %s: %v", role, err)
	}
	t.Cleanup(nc.Close)
	c.nc = nc
	if c.js, err = jetstream.New(nc); err != nil {
		t.Fatal(err)
	}
	return c
}

// refused asserts that the server reported a permission violation naming
// subject, within a few seconds.
func (c *client) refused(subject string) {
	c.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		c.mu.Lock()
		for _, v := range c.violations {
			if strings.Contains(strings.ToLower(v), "permissions violation") && strings.Contains(v, subject) {
				c.mu.Unlock()
				return
			}
		}
		c.mu.Unlock()
		time.Sleep(20 * time.Millisecond)
	}
	c.t.Fatalf("no permission violation for %q; violations: %v", subject, c.violations)
}

// pullOne looks up durable, fetches one message from it and acknowledges
// it, failing the test if any step is refused.
func (c *client) pullOne(stream, durable string) {
	c.t.Helper()
	cons, err := c.js.Consumer(short(c.t), stream, durable)
	if err != nil {
		c.t.Fatalf("look up %s/%s: %v", stream, durable, err)
	}
	batch, err := cons.Fetch(1, jetstream.FetchMaxWait(2*time.Second))
	if err != nil {
		c.t.Fatal(err)
	}
	got := 0
	for m := range batch.Messages() {
		if err := m.DoubleAck(short(c.t)); err != nil {
			c.t.Fatalf("ack a delivery of %s/%s: %v", stream, durable, err)
		}
		got++
	}
	if got != 1 {
		c.t.Fatalf("fetched %d messages from %s/%s, want 1 (%v)", got, stream, durable, batch.Error())
	}
}

func short(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func (b *testBundle) msgs(t *testing.T, stream string) uint64 {
	t.Helper()
	s, err := b.owner.Stream(context.Background(), stream)
	if err != nil {
		t.Fatalf("stream %s: %v", stream, err)
	}
	info, err := s.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return info.State.Msgs
}

func TestProducerPublishesChunksOnly(t *testing.T) {
	t.Parallel()
	b := setup(t)
	p := b.as(t, natsauth.Producer)
	if _, err := p.js.Publish(short(t), "ingest.chunks.docs", []byte("job")); err != nil {
		t.Fatalf("producer publish of a chunk job: %v", err)
	}
	if _, err := p.js.Publish(short(t), "dlq.quarantine.docs", []byte("forged")); err == nil {
		t.Fatal("the producer published a dead letter")
	}
	p.refused("dlq.quarantine.docs")
	if n := b.msgs(t, broker.DLQStream); n != 0 {
		t.Fatalf("DLQ holds %d messages after the producer's refused publish", n)
	}
	if err := p.js.DeleteStream(short(t), broker.IngestStream); err == nil {
		t.Fatal("the producer deleted INGEST")
	}
	p.refused("$JS.API.STREAM.DELETE." + broker.IngestStream)
	cfg := broker.Topology{}.IngestConfig()
	cfg.MaxMsgs = 1
	if _, err := p.js.UpdateStream(short(t), cfg); err == nil {
		t.Fatal("the producer updated INGEST")
	}
	p.refused("$JS.API.STREAM.UPDATE." + broker.IngestStream)
	if n := b.msgs(t, broker.IngestStream); n != 1 {
		t.Fatalf("INGEST holds %d messages, want the producer's one job: was it deleted or changed?", n)
	}
	s, _ := b.owner.Stream(context.Background(), broker.IngestStream)
	if s.CachedInfo().Config.MaxMsgs == 1 {
		t.Fatal("INGEST's bounds were changed by the producer")
	}
}

// A publisher of chunk jobs cannot read INGEST's messages — another
// source's chunk text included — and still verifies its deduplicated
// PubAcks: a job whose first copy is in the stream counts as confirmed,
// one whose message is gone is published again under its next
// generation.
func TestProducerVerifiesPubAcksWithoutReadingChunks(t *testing.T) {
	t.Parallel()
	b := setup(t)
	if _, err := b.owner.Publish(context.Background(), "ingest.chunks.other", []byte("another source's chunk text")); err != nil {
		t.Fatal(err)
	}
	p := b.as(t, natsauth.Producer)
	stream, err := p.js.Stream(short(t), broker.IngestStream)
	if err != nil {
		t.Fatalf("producer reads INGEST's information: %v", err)
	}
	if msg, err := stream.GetMsg(short(t), 1); err == nil {
		t.Fatalf("the producer read another source's message: %q", msg.Data)
	}
	p.refused("$JS.API.STREAM.MSG.GET." + broker.IngestStream)

	ctx := context.Background()
	pool := testenv.NewDatabase(t).Pool
	jobs := pendingJobs(t, pool, "a", "b")
	pub := publish.NewPublisher(pool, p.js, publish.PublisherConfig{})
	if res, err := pub.Publish(ctx, jobs); err != nil || res.Confirmed != 2 || len(res.Failed) != 0 {
		t.Fatalf("first publish: %+v, %v", res, err)
	}
	res, err := pub.Publish(ctx, jobs)
	if err != nil || res.Confirmed != 2 || res.Regenerated != 0 || len(res.Failed) != 0 {
		t.Fatalf("deduplicated publish of present messages: %+v, %v; want both confirmed, none regenerated", res, err)
	}
	// a's message (sequence 2) leaves the stream between the others, as
	// an acknowledgement out of order would take it.
	owned, err := b.owner.Stream(ctx, broker.IngestStream)
	if err != nil {
		t.Fatal(err)
	}
	if err := owned.DeleteMsg(ctx, 2); err != nil {
		t.Fatal(err)
	}
	res, err = pub.Publish(ctx, jobs)
	if err != nil || res.Confirmed != 2 || res.Regenerated != 1 || len(res.Failed) != 0 {
		t.Fatalf("deduplicated publish after a's message left: %+v, %v; want a regenerated, both confirmed", res, err)
	}
	if n := b.msgs(t, broker.IngestStream); n != 3 {
		t.Fatalf("INGEST holds %d messages; want the other source's, b's and a's next generation", n)
	}
}

// pendingJobs records one pending single-chunk document of source "s" per
// name and returns the jobs the publisher sends for them.
func pendingJobs(t *testing.T, pool *pgxpool.Pool, names ...string) []publish.Job {
	t.Helper()
	c := manifest.MakeChunks(len(names))
	hashes, raws := make([]string, len(names)), make([][]byte, len(names))
	jobs := make([]publish.Job, len(names))
	for i, n := range names {
		if _, err := pool.Exec(t.Context(), `INSERT INTO documents (doc_id, source_id, source_native_id, version, content_hash, chunk_count, status)
			VALUES ($1, 's', $1, 1, 'h', 1, 'pending')`, n); err != nil {
			t.Fatal(err)
		}
		c.Add(n, 0, 1)
		hashes[i], raws[i] = "h", []byte(n)
		jobs[i] = publish.Job{DocID: n, Version: 1, Source: "s", Raw: raws[i]}
	}
	if err := manifest.RecordPending(t.Context(), pool, "run", c, hashes, raws); err != nil {
		t.Fatal(err)
	}
	return jobs
}

func TestConsumerPullsAndAcksButCannotPublish(t *testing.T) {
	t.Parallel()
	b := setup(t)
	if _, err := b.owner.Publish(context.Background(), "ingest.chunks.docs", []byte("job")); err != nil {
		t.Fatal(err)
	}
	c := b.as(t, natsauth.Consumer)
	c.pullOne(broker.IngestStream, broker.WorkersConsumer)
	if err := c.nc.Publish("dlq.quarantine.docs", []byte("forged")); err != nil {
		t.Fatal(err)
	}
	c.refused("dlq.quarantine.docs")
	if n := b.msgs(t, broker.DLQStream); n != 0 {
		t.Fatalf("DLQ holds %d messages after the consumer's refused publish", n)
	}
	if _, err := c.js.CreateOrUpdateConsumer(short(t), broker.IngestStream, jetstream.ConsumerConfig{Durable: "rogue"}); err == nil {
		t.Fatal("the consumer created a durable")
	}
	if _, err := c.js.Consumer(short(t), broker.DLQStream, broker.TriageConsumer); err == nil {
		t.Fatal("the consumer read a DLQ durable")
	}
}

func TestRelayCannotPullFromIngest(t *testing.T) {
	t.Parallel()
	b := setup(t)
	if _, err := b.owner.Publish(context.Background(), "ingest.chunks.docs", []byte("job")); err != nil {
		t.Fatal(err)
	}
	r := b.as(t, natsauth.Relay)
	if _, err := r.js.Publish(short(t), "dlq.quarantine.docs", []byte("dead letter")); err != nil {
		t.Fatalf("relay publish of a dead letter: %v", err)
	}
	for _, durable := range []string{broker.WorkersConsumer, broker.ReplayConsumer} {
		// A pull request goes to the durable's MSG.NEXT subject whether or
		// not the consumer handle could be looked up.
		inbox := r.nc.NewRespInbox()
		if err := r.nc.PublishRequest("$JS.API.CONSUMER.MSG.NEXT."+broker.IngestStream+"."+durable, inbox, []byte(`{"batch":1}`)); err != nil {
			t.Fatal(err)
		}
		r.refused("$JS.API.CONSUMER.MSG.NEXT." + broker.IngestStream + "." + durable)
	}
	if n := b.msgs(t, broker.IngestStream); n != 1 {
		t.Fatalf("INGEST holds %d jobs, want the 1 the relay could not take", n)
	}
}

func TestReplayerPullsDLQOnly(t *testing.T) {
	t.Parallel()
	b := setup(t)
	if _, err := b.owner.Publish(context.Background(), "dlq.retry.docs", []byte("dead letter")); err != nil {
		t.Fatal(err)
	}
	r := b.as(t, natsauth.Replayer)
	r.pullOne(broker.DLQStream, broker.TriageConsumer)
	if _, err := r.js.Publish(short(t), "ingest.replay.docs", []byte("job")); err == nil {
		t.Fatal("the replayer published a replay job")
	}
	r.refused("ingest.replay.docs")
}

func TestOperatorPausesButCannotChangeTopology(t *testing.T) {
	t.Parallel()
	b := setup(t)
	o := b.as(t, natsauth.Operator)
	if _, err := o.js.PauseConsumer(short(t), broker.IngestStream, broker.ReplayConsumer, time.Now().Add(time.Hour)); err != nil {
		t.Fatalf("operator pauses the replay durable: %v", err)
	}
	if _, err := o.js.PauseConsumer(short(t), broker.IngestStream, broker.WorkersConsumer, time.Now().Add(time.Hour)); err == nil {
		t.Fatal("the operator paused live ingestion")
	}
	if err := o.js.DeleteConsumer(short(t), broker.DLQStream, broker.TriageConsumer); err == nil {
		t.Fatal("the operator deleted a durable")
	}
	o.refused("$JS.API.CONSUMER.DELETE." + broker.DLQStream + "." + broker.TriageConsumer)
	if err := o.js.DeleteStream(short(t), broker.DLQStream); err == nil {
		t.Fatal("the operator deleted the DLQ")
	}
	if _, err := b.owner.Consumer(context.Background(), broker.DLQStream, broker.TriageConsumer); err != nil {
		t.Fatalf("triage durable gone after the operator's refused delete: %v", err)
	}
}

// The console replays, pauses, resumes and reads the replay durable, and
// holds none of the operator's other rights: it cannot publish chunk jobs,
// delete messages, nor pause live ingestion.
func TestConsoleReplaysButNothingElse(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := b.as(t, natsauth.Console)
	if _, err := c.js.Publish(short(t), "ingest.replay.docs", []byte("replay job")); err != nil {
		t.Fatalf("console publish of a replay job: %v", err)
	}
	if _, err := c.js.Consumer(short(t), broker.IngestStream, broker.ReplayConsumer); err != nil {
		t.Fatalf("console reads the replay durable: %v", err)
	}
	for _, d := range []struct{ stream, name string }{{broker.IngestStream, broker.ReplayConsumer}, {broker.DLQStream, broker.ReplayerConsumer}} {
		if _, err := c.js.PauseConsumer(short(t), d.stream, d.name, time.Now().Add(time.Hour)); err != nil {
			t.Fatalf("console pauses %s/%s: %v", d.stream, d.name, err)
		}
		if _, err := c.js.ResumeConsumer(short(t), d.stream, d.name); err != nil {
			t.Fatalf("console resumes %s/%s: %v", d.stream, d.name, err)
		}
	}
	if _, err := c.js.PauseConsumer(short(t), broker.IngestStream, broker.WorkersConsumer, time.Now().Add(time.Hour)); err == nil {
		t.Fatal("the console paused live ingestion")
	}
	c.refused("$JS.API.CONSUMER.PAUSE." + broker.IngestStream + "." + broker.WorkersConsumer)
	if _, err := c.js.Publish(short(t), "ingest.chunks.docs", []byte("forged job")); err == nil {
		t.Fatal("the console published a chunk job")
	}
	c.refused("ingest.chunks.docs")
	s, err := c.js.Stream(short(t), broker.IngestStream)
	if err != nil {
		t.Fatalf("console reads INGEST's information: %v", err)
	}
	if err := s.DeleteMsg(short(t), 1); err == nil {
		t.Fatal("the console deleted a message from INGEST")
	}
	c.refused("$JS.API.STREAM.MSG.DELETE." + broker.IngestStream)
	if n := b.msgs(t, broker.IngestStream); n != 1 {
		t.Fatalf("INGEST holds %d messages, want the console's one replay job", n)
	}
}

// Replies, pulled messages included, go to the receiver's own inbox
// prefix: no role can subscribe to another's, nor to every inbox.
func TestRolesCannotReadOthersInboxes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	p := b.as(t, natsauth.Producer)
	for _, subject := range []string{broker.InboxPrefix(string(natsauth.Consumer)) + ".>", "_INBOX.>"} {
		if _, err := p.nc.SubscribeSync(subject); err != nil {
			t.Fatal(err)
		}
		if err := p.nc.Flush(); err != nil {
			t.Fatal(err)
		}
		p.refused(subject)
	}
}

func TestUnauthenticatedClientsAreRefused(t *testing.T) {
	t.Parallel()
	b := setup(t)
	plain := natsauth.URLWithUser(b.nats.URL, "", "")
	plain = strings.Replace(plain, "//:@", "//", 1)
	for name, url := range map[string]string{
		"anonymous":      plain,
		"wrong password": natsauth.URLWithUser(b.nats.URL, string(natsauth.Owner), "guess"),
		"unknown user":   natsauth.URLWithUser(b.nats.URL, "admin", "admin"),
	} {
		nc, err := nats.Connect(url, nats.NoReconnect(), nats.Timeout(2*time.Second))
		if err == nil {
			nc.Close()
			t.Errorf("%s: connected", name)
			continue
		}
		if !errors.Is(err, nats.ErrAuthorization) && !strings.Contains(strings.ToLower(err.Error()), "authorization") {
			t.Errorf("%s: %v, want an authorization error", name, err)
		}
	}
}
