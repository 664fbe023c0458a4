package manifest

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// MarkStored marks each chunk of c Stored at its version, with its attempt
// count, and clears its job: its text now lives in chunk_embeddings and
// nothing republishes a stored chunk (retention, migration 00012). A
// stored chunk's published_at is when JetStream took the message that was
// stored (published[i], the delivered message's stream timestamp), so its
// producer need not confirm it (publish.PublisherConfig) and the time from
// publish to store is one well-defined interval: a PubAck the producer
// held and recorded later, even after the store began, is not when
// JetStream had the job. Only when published[i] is zero (unknown) is a
// recorded PubAck kept.
// Only Pending and Parked chunks move. The store resolves the chunks'
// open dead letters in the same transaction (deadletter.Resolve), so
// replays and late redeliveries close the loop.
func MarkStored(ctx context.Context, q Querier, c Chunks, attempts []int32, published []time.Time) error {
	_, err := q.Exec(ctx, lockedInKeyOrder(`unnest($1::text[], $2::int4[], $3::int8[], $4::int4[], $5::timestamptz[]) AS t(doc_id, chunk_index, version, attempts, published)`,
		`m.version = t.version AND m.status IN ('pending', 'parked')`)+`
		UPDATE ingest_manifest m
		SET status = 'stored', attempts = t.attempts, last_error_class = NULL, job = NULL,
		    published_at = coalesce(t.published, m.published_at), updated_at = now()`+fromLocked,
		c.DocIDs, c.Indexes, c.Versions, attempts, timestamps(published))
	return err
}

// timestamps is ts as PostgreSQL timestamps, a zero time as NULL.
func timestamps(ts []time.Time) []pgtype.Timestamptz {
	out := make([]pgtype.Timestamptz, len(ts))
	for i, t := range ts {
		out[i] = pgtype.Timestamptz{Time: t, Valid: !t.IsZero()}
	}
	return out
}

// Failure is one chunk's failure as Park records it.
type Failure struct {
	DocID     string
	Index     int
	Version   int64
	Attempts  int
	Class     string
	ReplayGen int
	// Published is when JetStream took the chunk's message, as
	// MarkStored's published; zero when unknown.
	Published time.Time
}

// Park marks each failure's chunk Parked at its version, in one statement
// that locks the rows in key order like every other multi-row update. A
// Pending chunk moves; a Parked one only for a later replay generation,
// so a redelivery after a crash changes nothing. moved[i] reports whether
// fs[i]'s row moved.
func Park(ctx context.Context, q Querier, fs []Failure) (moved []bool, err error) {
	c := MakeChunks(len(fs))
	attempts, classes, gens := make([]int32, len(fs)), make([]string, len(fs)), make([]int32, len(fs))
	published := make([]time.Time, len(fs))
	for i, f := range fs {
		c.Add(f.DocID, f.Index, f.Version)
		attempts[i], classes[i], gens[i], published[i] = int32(f.Attempts), f.Class, int32(f.ReplayGen), f.Published
	}
	rows, err := q.Query(ctx, lockedInKeyOrder(`unnest($1::text[], $2::int4[], $3::int8[], $4::int4[], $5::text[], $6::int4[], $7::timestamptz[])
		WITH ORDINALITY AS t(doc_id, chunk_index, version, attempts, class, replay_gen, published, ord)`,
		`m.version = t.version AND (m.status = 'pending' OR (m.status = 'parked' AND m.replay_gen < t.replay_gen))`)+`
		UPDATE ingest_manifest m
		SET status = 'parked', attempts = t.attempts, last_error_class = t.class, replay_gen = t.replay_gen,
		    published_at = coalesce(m.published_at, t.published), updated_at = now()`+fromLocked+`
		RETURNING t.ord`, c.DocIDs, c.Indexes, c.Versions, attempts, classes, gens, timestamps(published))
	if err != nil {
		return nil, err
	}
	moved = make([]bool, len(fs))
	var ord int64
	_, err = pgx.ForEachRow(rows, []any{&ord}, func() error {
		moved[ord-1] = true
		return nil
	})
	return moved, err
}

// SupersedePending marks Superseded each chunk of c still Pending at its
// version: a newer version replaced it, and the reconciler must not count
// it as owed work.
func SupersedePending(ctx context.Context, q Querier, c Chunks) error {
	_, err := q.Exec(ctx, lockedInKeyOrder(`unnest($1::text[], $2::int4[], $3::int8[]) AS t(doc_id, chunk_index, version)`,
		`m.version = t.version AND m.status = 'pending'`)+`
		UPDATE ingest_manifest m SET status = 'superseded', updated_at = now()`+fromLocked,
		c.DocIDs, c.Indexes, c.Versions)
	return err
}

// Reopen sends each Stored or Parked chunk of c (keyed by doc_id and
// chunk_index) that still holds its job back to Pending, unpublished,
// under its next publish generation. It returns how many moved.
func Reopen(ctx context.Context, q Querier, c Chunks) (int64, error) {
	tag, err := q.Exec(ctx, lockedInKeyOrder(`unnest($1::text[], $2::int4[]) AS t(doc_id, chunk_index)`,
		`m.status IN ('stored', 'parked') AND m.job IS NOT NULL`)+`
		UPDATE ingest_manifest m SET status = 'pending', published_at = NULL, publish_seq = NULL,
		       publish_gen = m.publish_gen + 1, updated_at = now()`+fromLocked, c.DocIDs, c.Indexes)
	if err != nil {
		return 0, err
	}
	return tag.RowsAffected(), nil
}
