package manifest

import (
	"context"
	"time"

	"github.com/sluicehq/sluice/internal/platform/policy"
)

// ClearParkedJobs clears the job bytes of at most limit Parked chunks
// that no longer need them, and returns how many it cleared. A parked
// chunk's job is its dead letter's payload verbatim, and nothing
// republishes a parked chunk that has a dead letter (Reopen takes only
// those without one), so the job goes once the chunk's dead letter of
// its version or later has lost its payload to retention or been
// resolved. A parked chunk whose dead letter is still in the outbox, or
// whose dead letter is open and keeps its payload, keeps its job; a
// Pending chunk's job is owed work and is never cleared. The status does
// not move, and updated_at stays: this is retention, not a settlement.
// Rows locked elsewhere are skipped until the next call.
func ClearParkedJobs(ctx context.Context, q Querier, limit int) (int64, error) {
	tag, err := q.Exec(ctx, `
		WITH due AS (
			SELECT m.doc_id, m.chunk_index FROM ingest_manifest m
			WHERE m.status = `+SQLParked+` AND m.job IS NOT NULL
			  AND EXISTS (SELECT 1 FROM dead_letters d
			              WHERE d.doc_id = m.doc_id AND d.chunk_index = m.chunk_index AND d.version >= m.version
			                AND (d.payload_purged_at IS NOT NULL OR d.resolved_at IS NOT NULL))
			ORDER BY m.doc_id, m.chunk_index
			LIMIT $1
			FOR UPDATE OF m SKIP LOCKED)
		UPDATE ingest_manifest m SET job = NULL
		FROM due WHERE m.doc_id = due.doc_id AND m.chunk_index = due.chunk_index AND m.status = `+SQLParked, limit)
	if err != nil {
		return 0, err
	}
	return tag.RowsAffected(), nil
}

// PurgeEscalatedText deletes at most limit rows of escalated_chunks, the
// one copy of a secret's text, older at now than their document's
// source's escalation retention in keep (the default bound for a
// document that is gone), and returns how many it deleted. The policy
// never lets that retention fall below the retention mandate. The
// escalation's dead letter keeps its redacted payload for the same
// retention, counted from its last failure.
func PurgeEscalatedText(ctx context.Context, q Querier, keep policy.Bounds, now time.Time, limit int) (int64, error) {
	tag, err := q.Exec(ctx, `
		DELETE FROM escalated_chunks WHERE (doc_id, chunk_index, version) IN (
			SELECT x.doc_id, x.chunk_index, x.version FROM escalated_chunks x
			LEFT JOIN documents doc ON doc.doc_id = x.doc_id
			LEFT JOIN unnest($2::text[], $3::float8[]) AS p(source_id, secs) ON p.source_id = doc.source_id
			WHERE x.created_at < $1::timestamptz - make_interval(secs => $5)
			  AND x.created_at < $1::timestamptz - make_interval(secs => coalesce(p.secs, $4))
			LIMIT $6)`,
		now, keep.Sources, keep.Seconds, keep.Default, keep.Shortest(), limit)
	if err != nil {
		return 0, err
	}
	return tag.RowsAffected(), nil
}
