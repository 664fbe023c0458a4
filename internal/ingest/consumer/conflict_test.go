package consumer_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/sluicehq/sluice/internal/ingest/consumer"
	"github.com/sluicehq/sluice/internal/ingest/pipeline"
)

// deadlocking fails its first batches as a pipeline does whose
// transaction PostgreSQL aborted to break a deadlock, then runs the
// pipeline.
type deadlocking struct {
	next consumer.Processor
	left atomic.Int32
}

func (d *deadlocking) Process(ctx context.Context, jobs []*pipeline.Job) error {
	if d.left.Add(-1) >= 0 {
		return fmt.Errorf("admit to the bulk ledger: record members: %w", &pgconn.PgError{Code: "40P01", Message: "deadlock detected"})
	}
	return d.next.Process(ctx, jobs)
}

// A batch whose transaction loses a deadlock more often than its chunks
// may be delivered runs again in place: every chunk is stored, none is
// parked, and no message goes back to JetStream.
func TestABatchThatLosesADeadlockRunsAgainInPlace(t *testing.T) {
	t.Parallel()
	failing := &deadlocking{}
	failing.left.Store(5)
	o := options{batchSize: 8, pipe: pipeline.Config{MaxDeliveries: 3},
		wrap: func(p consumer.Processor) consumer.Processor { failing.next = p; return failing }}
	b := setup(t, o)
	b.startConsumer(o)
	const chunks = 6
	docs := map[string][]byte{}
	for i := range chunks {
		docs[fmt.Sprintf("d%d.txt", i)] = fmt.Appendf(nil, "a document whose batch meets a deadlock, number %d", i)
	}
	b.produce("conflicts", docs)
	b.waitSettled(60 * time.Second)

	if n := failing.left.Load(); n >= 0 {
		t.Fatalf("the pipeline was asked %d times fewer than its deadlocks: the test did not run them", n+1)
	}
	if n := b.count(`SELECT count(*) FROM ingest_manifest WHERE status = 'parked'`); n != 0 {
		t.Errorf("%d chunks parked for deadlocks that were not theirs", n)
	}
	if n := b.count(`SELECT count(*) FROM chunk_embeddings`); n != chunks {
		t.Errorf("stored %d of %d", n, chunks)
	}
	if n := b.count(`SELECT max(attempts) FROM ingest_manifest`); n > 1 {
		t.Errorf("a chunk spent %d deliveries, want 1", n)
	}
}
