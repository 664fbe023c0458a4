package deadletter_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sluicehq/sluice/internal/dev/testenv"
	"github.com/sluicehq/sluice/internal/store/deadletter"
	"github.com/sluicehq/sluice/internal/store/manifest"
	"github.com/sluicehq/sluice/pkg/messages"
)

// record records a failure of chunk index of docID at version.
func record(t *testing.T, pool *pgxpool.Pool, docID string, index int, version int64) {
	t.Helper()
	dl := messages.DeadLetter{Schema: messages.DeadLetterSchema, DeadLetterID: messages.DeadLetterID(docID, index),
		DocID: docID, ChunkIndex: index, DocVersion: version, SourceID: "s", SourceNativeID: docID,
		Disposition: messages.DispositionQuarantine, ErrorClass: "bad_request", Stage: "embed", Attempts: 1,
		FailedAt: time.Now(), Payload: []byte("{}")}
	outcome, resolved, err := deadletter.Record(context.Background(), pool, dl, 1)
	if err != nil || outcome != deadletter.Inserted || resolved {
		t.Fatalf("record %s/%d: %s, resolved %v, %v; want inserted, open", docID, index, outcome, resolved, err)
	}
}

// resolution returns whether chunk index of docID is resolved, and why.
func resolution(t *testing.T, pool *pgxpool.Pool, docID string, index int) (bool, string) {
	t.Helper()
	var resolved bool
	var why *string
	if err := pool.QueryRow(context.Background(), `SELECT resolved_at IS NOT NULL, resolution FROM dead_letters WHERE doc_id = $1 AND chunk_index = $2`,
		docID, index).Scan(&resolved, &why); err != nil {
		t.Fatal(err)
	}
	if why == nil {
		return resolved, "NULL"
	}
	return resolved, *why
}

// Resolve resolves each named chunk's dead letter at its version or an
// older one, and with no chunk indexes every chunk of each document: the
// store's, reconcile's and a superseding version's resolutions, in one
// statement. A newer dead letter, or another chunk's, stays open, and
// resolving twice changes nothing.
func TestResolve(t *testing.T) {
	t.Parallel()
	pool := testenv.NewDatabase(t).Pool
	ctx := context.Background()
	record(t, pool, "stored", 0, 2)
	record(t, pool, "stored", 1, 2)
	record(t, pool, "newer", 0, 3)
	record(t, pool, "gone", 0, 1)
	record(t, pool, "gone", 1, 1)
	record(t, pool, "kept", 0, 2)

	var c manifest.Chunks
	c.Add("stored", 0, 2)
	c.Add("newer", 0, 2)
	if n, err := deadletter.Resolve(ctx, pool, c, ""); err != nil || n != 1 {
		t.Fatalf("resolve stored chunks: %d, %v; want 1", n, err)
	}
	if n, err := deadletter.Resolve(ctx, pool, c, manifest.Stored); err != nil || n != 0 {
		t.Fatalf("resolve stored chunks again: %d, %v; want 0", n, err)
	}
	superseded := manifest.Chunks{DocIDs: []string{"gone", "kept"}, Versions: []int64{1, 1}}
	if n, err := deadletter.Resolve(ctx, pool, superseded, manifest.Superseded); err != nil || n != 2 {
		t.Fatalf("resolve superseded documents: %d, %v; want 2", n, err)
	}
	for _, tc := range []struct {
		doc      string
		index    int
		resolved bool
		why      string
	}{
		{"stored", 0, true, "NULL"},
		{"stored", 1, false, "NULL"},
		{"newer", 0, false, "NULL"},
		{"gone", 0, true, string(manifest.Superseded)},
		{"gone", 1, true, string(manifest.Superseded)},
		{"kept", 0, false, "NULL"},
	} {
		if resolved, why := resolution(t, pool, tc.doc, tc.index); resolved != tc.resolved || why != tc.why {
			t.Errorf("%s/%d: resolved %v (%s), want %v (%s)", tc.doc, tc.index, resolved, why, tc.resolved, tc.why)
		}
	}
}
