package publish_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/sluicehq/sluice/internal/dev/testenv"
	"github.com/sluicehq/sluice/internal/ingest/publish"
	"github.com/sluicehq/sluice/internal/platform/broker"
	"github.com/sluicehq/sluice/internal/store/manifest"
)

// recordJobs records one pending single-chunk document per name, with
// the job bytes the publisher sends, and returns their jobs.
func recordJobs(t *testing.T, pool *pgxpool.Pool, names ...string) []publish.Job {
	t.Helper()
	ctx := t.Context()
	c := manifest.MakeChunks(len(names))
	hashes, raws := make([]string, len(names)), make([][]byte, len(names))
	jobs := make([]publish.Job, len(names))
	for i, n := range names {
		if _, err := pool.Exec(ctx, `INSERT INTO documents (doc_id, source_id, source_native_id, version, content_hash, chunk_count, status)
			VALUES ($1, 's', $1, 1, 'h', 1, 'pending')`, n); err != nil {
			t.Fatal(err)
		}
		c.Add(n, 0, 1)
		hashes[i], raws[i] = "h", []byte(fmt.Sprintf(`{"doc_id":%q}`, n))
		jobs[i] = publish.Job{DocID: n, Version: 1, Source: "s", Raw: raws[i]}
	}
	if err := manifest.RecordPending(ctx, pool, "run", c, hashes, raws); err != nil {
		t.Fatal(err)
	}
	return jobs
}

// ingestMsgIDs returns the Nats-Msg-Id of every message in INGEST.
func ingestMsgIDs(t *testing.T, js jetstream.JetStream) []string {
	t.Helper()
	ctx := t.Context()
	stream, err := js.Stream(ctx, broker.IngestStream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := stream.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for seq := info.State.FirstSeq; info.State.Msgs > 0 && seq <= info.State.LastSeq; seq++ {
		msg, err := stream.GetMsg(ctx, seq)
		if err != nil {
			continue // a deleted sequence
		}
		ids = append(ids, msg.Header.Get(jetstream.MsgIDHeader))
	}
	return ids
}

// A lost and recreated INGEST stream: the sweeper sees that the jobs'
// confirmations predate the stream and publishes every one of them
// again, with no operator action; before the loss it publishes nothing.
func TestSweeperRepublishesWhenIngestIsRecreated(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testenv.NewDatabase(t).Pool
	_, js := testenv.NewJetStream(t, broker.Topology{})
	jobs := recordJobs(t, pool, "a", "b", "c")
	if res, err := publish.NewPublisher(pool, js, publish.PublisherConfig{}).Publish(ctx, jobs); err != nil || res.Confirmed != 3 {
		t.Fatalf("publish: %+v, %v", res, err)
	}
	sw, err := publish.NewSweeper(publish.SweeperConfig{}, publish.SweeperDeps{Pool: pool, JS: js, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	if res, err := sw.Sweep(ctx, "", 0); err != nil || res.Confirmed != 0 {
		t.Fatalf("sweep of confirmed work in its own stream: %+v, %v; want nothing published", res, err)
	}

	if err := js.DeleteStream(ctx, broker.IngestStream); err != nil {
		t.Fatal(err)
	}
	ensure, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := broker.Ensure(ensure, js, broker.Topology{}); err != nil {
		t.Fatal(err)
	}
	res, err := sw.Sweep(ctx, "", 0)
	if err != nil || res.Confirmed != 3 || len(res.Failed) != 0 {
		t.Fatalf("sweep after INGEST was recreated: %+v, %v; want all 3 published again", res, err)
	}
	if ids := ingestMsgIDs(t, js); len(ids) != 3 {
		t.Fatalf("INGEST holds %v after the sweep; want the 3 jobs", ids)
	}
}

// A deduplicated PubAck for a message that is gone is not success: the
// publisher finds the message missing, moves the chunk to its next
// publish generation, and publishes it under a new Nats-Msg-Id that the
// duplicate window cannot swallow.
func TestGoneMessageIsPublishedUnderItsNextGeneration(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testenv.NewDatabase(t).Pool
	_, js := testenv.NewJetStream(t, broker.Topology{})
	pub := publish.NewPublisher(pool, js, publish.PublisherConfig{})
	jobs := recordJobs(t, pool, "a")
	if res, err := pub.Publish(ctx, jobs); err != nil || res.Confirmed != 1 {
		t.Fatalf("publish: %+v, %v", res, err)
	}
	stream, err := js.Stream(ctx, broker.IngestStream)
	if err != nil {
		t.Fatal(err)
	}
	// The message leaves the stream but its id stays in the duplicate
	// window, as after a purge or a lost message.
	if err := stream.DeleteMsg(ctx, 1); err != nil {
		t.Fatal(err)
	}
	res, err := pub.Publish(ctx, jobs)
	if err != nil || res.Regenerated != 1 || res.Confirmed != 1 || len(res.Failed) != 0 {
		t.Fatalf("republish of a gone message: %+v, %v; want 1 regenerated and confirmed", res, err)
	}
	ids := ingestMsgIDs(t, js)
	if len(ids) != 1 || !strings.HasSuffix(ids[0], ":r1") {
		t.Fatalf("INGEST holds %v; want the job once, under generation 1 (:r1)", ids)
	}
	var gen int
	var seq *int64
	if err := pool.QueryRow(ctx, `SELECT publish_gen, publish_seq FROM ingest_manifest WHERE doc_id = 'a'`).Scan(&gen, &seq); err != nil {
		t.Fatal(err)
	}
	if gen != 1 || seq == nil {
		t.Fatalf("manifest: publish_gen %d, publish_seq %v; want 1 and the new message's sequence", gen, seq)
	}
}
