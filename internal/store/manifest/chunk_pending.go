package manifest

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// The statements below change what a Pending chunk owes, never its
// status; each leaves every other status alone.

// Hold counts one more delivery spent waiting on a halted run for each
// Pending chunk of c (keyed by doc_id and chunk_index), so that the
// delivery cap never charges it to the chunk.
func Hold(ctx context.Context, q Querier, c Chunks) error {
	_, err := q.Exec(ctx, lockedInKeyOrder(`unnest($1::text[], $2::int4[]) AS t(doc_id, chunk_index)`, `m.status = 'pending'`)+`
		UPDATE ingest_manifest m SET held_deliveries = m.held_deliveries + 1`+fromLocked, c.DocIDs, c.Indexes)
	return err
}

// RecordAttempts notes the attempt count and error class of each Pending
// chunk of c going back for another delivery.
func RecordAttempts(ctx context.Context, q Querier, c Chunks, attempts []int32, classes []string) error {
	_, err := q.Exec(ctx, lockedInKeyOrder(`unnest($1::text[], $2::int4[], $3::int8[], $4::int4[], $5::text[]) AS t(doc_id, chunk_index, version, attempts, class)`,
		`m.version = t.version AND m.status = 'pending'`)+`
		UPDATE ingest_manifest m SET attempts = t.attempts, last_error_class = t.class, updated_at = now()`+fromLocked,
		c.DocIDs, c.Indexes, c.Versions, attempts, classes)
	return err
}

// NextGeneration moves each chunk of c still Pending at its version to
// its next publish generation, unconfirmed, and calls moved with the
// chunk's position in c and its new generation. Chunks settled meanwhile
// are skipped.
func NextGeneration(ctx context.Context, q Querier, c Chunks, moved func(i, gen int)) error {
	rows, err := q.Query(ctx, lockedInKeyOrder(`unnest($1::text[], $2::int4[], $3::int8[]) WITH ORDINALITY AS t(doc_id, chunk_index, version, ord)`,
		`m.version = t.version AND m.status = 'pending'`)+`
		UPDATE ingest_manifest m SET publish_gen = m.publish_gen + 1, published_at = NULL, publish_seq = NULL`+fromLocked+`
		RETURNING t.ord, m.publish_gen`, c.DocIDs, c.Indexes, c.Versions)
	if err != nil {
		return err
	}
	var ord int64
	var gen int
	_, err = pgx.ForEachRow(rows, []any{&ord, &gen}, func() error {
		moved(int(ord-1), gen)
		return nil
	})
	return err
}

// ConfirmPublished records that JetStream holds the job of each chunk of
// c, at the stream sequence in seqs, if the chunk is Pending or Parked at
// its version. A Stored chunk is left alone: its store recorded when it
// was published (MarkStored), and the sequence of a message already
// consumed serves no check.
func ConfirmPublished(ctx context.Context, q Querier, c Chunks, seqs []int64) error {
	_, err := q.Exec(ctx, lockedInKeyOrder(`unnest($1::text[], $2::int4[], $3::int8[], $4::int8[]) AS t(doc_id, chunk_index, version, seq)`,
		`m.version = t.version AND m.status IN ('pending', 'parked')`)+`
		UPDATE ingest_manifest m SET published_at = now(), publish_seq = t.seq`+fromLocked,
		c.DocIDs, c.Indexes, c.Versions, seqs)
	return err
}

// PendingJobs returns the recorded job of each chunk of c that is
// Pending at its version, nil for the others (settled, superseded by a
// later version, or unknown), in c's order. A bulk batch's results are
// applied through these jobs: they carry what the ledger does not keep
// (metadata, run, the payload a dead letter needs).
func PendingJobs(ctx context.Context, q Querier, c Chunks) ([][]byte, error) {
	rows, err := q.Query(ctx, `
		SELECT t.ord, m.job
		FROM unnest($1::text[], $2::int4[], $3::int8[]) WITH ORDINALITY AS t(doc_id, chunk_index, version, ord)
		JOIN ingest_manifest m ON m.doc_id = t.doc_id AND m.chunk_index = t.chunk_index AND m.version = t.version
		WHERE m.status = 'pending' AND m.job IS NOT NULL`, c.DocIDs, c.Indexes, c.Versions)
	if err != nil {
		return nil, err
	}
	jobs := make([][]byte, c.Len())
	var ord int64
	var job []byte
	_, err = pgx.ForEachRow(rows, []any{&ord, &job}, func() error {
		jobs[ord-1] = append([]byte(nil), job...)
		return nil
	})
	return jobs, err
}
