package publish_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sluicehq/sluice/internal/dev/clocktest"
	"github.com/sluicehq/sluice/internal/dev/testenv"
	"github.com/sluicehq/sluice/internal/ingest/publish"
	"github.com/sluicehq/sluice/internal/platform/broker"
	"github.com/sluicehq/sluice/internal/store/manifest"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// With a confirm delay, a PubAck is recorded only once the delay has
// passed or the publisher is flushed, and only for a chunk not stored
// meanwhile; until then the chunk counts as unconfirmed, so nothing a
// crash leaves held is lost.
func TestPublisherHoldsPubAcksForTheirDelay(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testenv.NewDatabase(t).Pool
	_, js := testenv.NewJetStream(t, broker.Topology{})
	clk := clocktest.New(time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC))
	pub := publish.NewPublisher(pool, js, publish.PublisherConfig{ConfirmDelay: time.Second, Now: clk.Now})

	record := func(names ...string) []publish.Job { return recordJobs(t, pool, names...) }
	unconfirmed := func() []string {
		t.Helper()
		rows, _ := pool.Query(ctx, `SELECT doc_id FROM ingest_manifest WHERE published_at IS NULL ORDER BY doc_id`)
		ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		return ids
	}
	publishAll := func(jobs []publish.Job) {
		t.Helper()
		res, err := pub.Publish(ctx, jobs)
		if err != nil || res.Confirmed != len(jobs) || len(res.Failed) != 0 {
			t.Fatalf("publish: %d confirmed, %d failed, err %v, %v", res.Confirmed, len(res.Failed), err, res.Err)
		}
	}
	want := func(step string, ids ...string) {
		t.Helper()
		if got := unconfirmed(); fmt.Sprint(got) != fmt.Sprint(ids) {
			t.Errorf("%s: unconfirmed %v, want %v", step, got, ids)
		}
	}

	publishAll(record("a", "b"))
	want("PubAcks held", "a", "b")

	// b is stored before its PubAck is recorded: its store confirms it,
	// at the time of the delivered message.
	delivered := clk.Now().Add(-time.Millisecond)
	b := manifest.MakeChunks(1)
	b.Add("b", 0, 1)
	if err := manifest.MarkStored(ctx, pool, b, []int32{1}, []time.Time{delivered}); err != nil {
		t.Fatal(err)
	}

	clk.Advance(999 * time.Millisecond)
	publishAll(record("c"))
	want("within the delay", "a", "c")

	clk.Advance(time.Millisecond)
	publishAll(record("d"))
	want("a and b's delay passed", "c", "d")
	var seqB *int64
	var atB time.Time
	if err := pool.QueryRow(ctx, `SELECT published_at, publish_seq FROM ingest_manifest WHERE doc_id = 'b'`).Scan(&atB, &seqB); err != nil {
		t.Fatal(err)
	}
	if !atB.Equal(delivered) || seqB != nil {
		t.Errorf("b, stored first: published_at %v, publish_seq recorded %v; want %v from its store and no sequence", atB, seqB != nil, delivered)
	}

	if err := pub.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	want("flushed")
	if err := pub.Flush(ctx); err != nil {
		t.Fatalf("flushing nothing: %v", err)
	}
}
