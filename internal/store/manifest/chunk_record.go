package manifest

import "context"

// RecordPending records a new version of each chunk as Pending, with the
// job that publishes it, for run runID. A row of the same or a later
// version is left alone, so recording a batch twice changes nothing.
func RecordPending(ctx context.Context, q Querier, runID string, c Chunks, hashes []string, jobs [][]byte) error {
	_, err := q.Exec(ctx, `
		INSERT INTO ingest_manifest (doc_id, chunk_index, version, content_hash, status, run_id, job)
		SELECT t.doc_id, t.chunk_index, t.version, t.hash, 'pending', $1, t.job
		FROM unnest($2::text[], $3::int4[], $4::int8[], $5::text[], $6::bytea[]) AS t(doc_id, chunk_index, version, hash, job)
		ORDER BY t.doc_id, t.chunk_index
		ON CONFLICT (doc_id, chunk_index) DO UPDATE SET version = EXCLUDED.version, content_hash = EXCLUDED.content_hash,
		    status = 'pending', attempts = 0, last_error_class = NULL, replay_gen = 0, run_id = EXCLUDED.run_id,
		    job = EXCLUDED.job, published_at = NULL, publish_seq = NULL, publish_gen = 0, updated_at = now()
		WHERE ingest_manifest.version < EXCLUDED.version`,
		runID, c.DocIDs, c.Indexes, c.Versions, hashes, jobs)
	return err
}

// ParkedChunk is a chunk the producer records parked, after one attempt:
// chunk 0 of a document it could not read or admit, whose job is the
// dead letter's payload, or a chunk held back because it touches a
// secret, whose job carries redacted text.
type ParkedChunk struct {
	DocID   string
	Index   int
	Version int64
	Hash    string
	Class   string
	RunID   string
	Job     []byte
}

// ParkUnreadable records chunk 0 of c's document as Parked, whatever the
// row held before.
func ParkUnreadable(ctx context.Context, q Querier, c ParkedChunk) error {
	_, err := q.Exec(ctx, `
		INSERT INTO ingest_manifest (doc_id, chunk_index, version, content_hash, status, attempts, last_error_class, run_id, job)
		VALUES ($1, 0, $2, '', 'parked', 1, $3, $4, $5)
		ON CONFLICT (doc_id, chunk_index) DO UPDATE SET version = EXCLUDED.version, status = 'parked',
		    attempts = 1, last_error_class = EXCLUDED.last_error_class, run_id = EXCLUDED.run_id,
		    job = EXCLUDED.job, replay_gen = 0, updated_at = now()`,
		c.DocID, c.Version, c.Class, c.RunID, c.Job)
	return err
}

// ParkEscalated records a new version of chunk c as Parked. A row of the
// same or a later version is left alone.
func ParkEscalated(ctx context.Context, q Querier, c ParkedChunk) error {
	_, err := q.Exec(ctx, `
		INSERT INTO ingest_manifest (doc_id, chunk_index, version, content_hash, status, attempts, last_error_class, run_id, job)
		VALUES ($1, $2, $3, $4, 'parked', 1, $5, $6, $7)
		ON CONFLICT (doc_id, chunk_index) DO UPDATE SET version = EXCLUDED.version, content_hash = EXCLUDED.content_hash,
		    status = 'parked', attempts = 1, last_error_class = EXCLUDED.last_error_class, run_id = EXCLUDED.run_id,
		    job = EXCLUDED.job, replay_gen = 0, published_at = NULL, publish_seq = NULL, publish_gen = 0, updated_at = now()
		WHERE ingest_manifest.version < EXCLUDED.version`,
		c.DocID, c.Index, c.Version, c.Hash, c.Class, c.RunID, c.Job)
	return err
}

// SupersedeBeyond marks Superseded every chunk of an older version of
// each document at or past the new version's chunk count: ids, versions
// and counts are the documents' new versions, column by column. Those
// chunks will never be stored again.
func SupersedeBeyond(ctx context.Context, q Querier, ids []string, versions []int64, counts []int32) error {
	_, err := q.Exec(ctx, `
		UPDATE ingest_manifest m SET status = 'superseded', updated_at = now()
		FROM unnest($1::text[], $2::int8[], $3::int4[]) AS t(doc_id, version, chunks)
		WHERE m.doc_id = ANY($1) AND m.doc_id = t.doc_id AND m.version < t.version
		  AND m.chunk_index >= t.chunks AND m.status <> 'superseded'`,
		ids, versions, counts)
	return err
}
