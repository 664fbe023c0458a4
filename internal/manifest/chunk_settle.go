package manifest

import "context"

// MarkStored marks each chunk of c Stored at its version, with its attempt
// count, and clears its job: its text now lives in chunk_embeddings and
// nothing republishes a stored chunk (retention, migration 00012). The
// same statement resolves the chunks' open dead letters, so replays and
// late redeliveries close the loop at no extra round trip. Only Pending
// and Parked chunks move.
func MarkStored(ctx context.Context, q Querier, c Chunks, attempts []int32) error {
	_, err := q.Exec(ctx, lockedInKeyOrder(`unnest($1::text[], $2::int4[], $3::int8[], $4::int4[]) AS t(doc_id, chunk_index, version, attempts)`,
		`m.version = t.version AND m.status IN ('pending', 'parked')`)+`,
		resolved AS (
			UPDATE dead_letters d SET resolved_at = now()
			FROM t WHERE d.doc_id = t.doc_id AND d.chunk_index = t.chunk_index
			  AND d.version <= t.version AND d.resolved_at IS NULL)
		UPDATE ingest_manifest m
		SET status = 'stored', attempts = t.attempts, last_error_class = NULL, job = NULL, updated_at = now()`+fromLocked,
		c.DocIDs, c.Indexes, c.Versions, attempts)
	return err
}

// Failure is one chunk's failure as Park records it.
type Failure struct {
	DocID     string
	Index     int
	Version   int64
	Attempts  int
	Class     string
	ReplayGen int
}

// Park marks f's chunk Parked at its version. A Pending chunk moves; a
// Parked one only for a later replay generation, so a redelivery after a
// crash changes nothing. It reports whether the row moved.
func Park(ctx context.Context, q Querier, f Failure) (bool, error) {
	tag, err := q.Exec(ctx, `
		UPDATE ingest_manifest
		SET status = 'parked', attempts = $4, last_error_class = $5, replay_gen = $6, updated_at = now()
		WHERE doc_id = $1 AND chunk_index = $2 AND version = $3
		  AND (status = 'pending' OR (status = 'parked' AND replay_gen < $6))`,
		f.DocID, f.Index, f.Version, f.Attempts, f.Class, f.ReplayGen)
	if err != nil {
		return false, err
	}
	return tag.RowsAffected() > 0, nil
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
