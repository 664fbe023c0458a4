package runs

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sluicehq/sluice/internal/manifest"
)

// Refresh updates every open run, and every run that ended with failures:
// a parked chunk stored later by a replay turns completed_with_failures
// into completed. It is idempotent and cheap enough to call every few
// seconds.
func Refresh(ctx context.Context, pool *pgxpool.Pool) error {
	_, err := pool.Exec(ctx, `
		WITH c AS (
			SELECT r.run_id,
			       count(m.doc_id) FILTER (WHERE m.status = $1) AS stored,
			       count(m.doc_id) FILTER (WHERE m.status = $2) AS parked,
			       count(m.doc_id) FILTER (WHERE m.status = $3) AS pending
			FROM ingest_runs r LEFT JOIN ingest_manifest m ON m.run_id = r.run_id
			WHERE r.finished_at IS NULL OR r.status = 'completed_with_failures'
			GROUP BY r.run_id),
		next AS (
			SELECT c.*, CASE
			         WHEN r.status IN ('halted', 'cancelled', 'failed') THEN r.status
			         WHEN r.publish_finished_at IS NULL OR c.pending > 0 THEN 'running'
			         WHEN c.parked > 0 THEN 'completed_with_failures'
			         ELSE 'completed' END AS status,
			       (r.publish_finished_at IS NOT NULL OR r.status IN ('halted', 'cancelled', 'failed')) AND c.pending = 0 AS done
			FROM c JOIN ingest_runs r USING (run_id))
		UPDATE ingest_runs r
		SET stored = n.stored, parked = n.parked, status = n.status,
		    finished_at = CASE WHEN n.done THEN coalesce(r.finished_at, now()) END
		FROM next n WHERE r.run_id = n.run_id`, manifest.Stored, manifest.Parked, manifest.Pending)
	if err != nil {
		return fmt.Errorf("refresh runs: %w", err)
	}
	return nil
}
