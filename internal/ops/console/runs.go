package console

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sluicehq/sluice/internal/store/deadletter"
	"github.com/sluicehq/sluice/internal/store/manifest"
	"github.com/sluicehq/sluice/internal/store/runs"
)

// runRow is one ingest run with its chunks counted live in the manifest.
// HeartbeatAt is when its producer was last heard from: a run whose
// producer fell silent ends interrupted once its chunks have settled.
type runRow struct {
	RunID, Source, Status                   string
	StartedAt                               time.Time
	FinishedAt                              *time.Time
	HeartbeatAt                             *time.Time
	Documents, Published, Stored, Parked    int
	HaltedReason                            *string
	Pending, ManifestStored, ManifestParked int64
	DeadLetters                             int64
	// Deleted counts the documents the run deleted (a sync run's deletes
	// of documents gone at the source); DeletedIDs are the first
	// runDeletedShown of their source ids.
	Deleted    int64
	DeletedIDs []string
}

// runDeletedShown is how many of a run's deleted documents the Runs
// pages name.
const runDeletedShown = 5

// DeletedMore is how many deleted documents are not named.
func (r runRow) DeletedMore() int64 { return r.Deleted - int64(len(r.DeletedIDs)) }

// ParkedNow is how many of the run's chunks are parked: the live manifest
// count, or the run's own counter once the manifest holds none of its
// chunks (they were republished by a later run, or never recorded).
func (r runRow) ParkedNow() int64 {
	if r.Pending+r.ManifestStored+r.ManifestParked == 0 {
		return int64(r.Parked)
	}
	return r.ManifestParked
}

// Rejection is the share of the run's settled chunks (stored or parked)
// that are parked, as runs.RejectionRatio defines it: live from the
// manifest, or from the run's own counters once the manifest holds none
// of its chunks. It never exceeds 1.
func (r runRow) Rejection() float64 {
	if r.Pending+r.ManifestStored+r.ManifestParked == 0 {
		return runs.RejectionRatio(r.Stored, r.Parked)
	}
	return runs.RejectionRatio(int(r.ManifestStored), int(r.ManifestParked))
}

var runColumns = `
		SELECT r.run_id, r.source_id, r.status, r.started_at, r.finished_at, r.heartbeat_at, r.documents, r.published, r.stored,
		       r.parked, r.halted_reason, m.pending, m.stored, m.parked,
		       (SELECT count(*) FROM document_deletions x JOIN deletion_requests q USING (request_id) WHERE q.run_id = r.run_id),
		       ARRAY(SELECT x.source_native_id FROM document_deletions x JOIN deletion_requests q USING (request_id)
		             WHERE q.run_id = r.run_id ORDER BY x.source_native_id LIMIT ` + strconv.Itoa(runDeletedShown) + `)
		FROM ingest_runs r
		CROSS JOIN LATERAL (
			SELECT count(*) FILTER (WHERE status = ` + manifest.SQLPending + `) AS pending,
			       count(*) FILTER (WHERE status = ` + manifest.SQLStored + `) AS stored,
			       count(*) FILTER (WHERE status = ` + manifest.SQLParked + `) AS parked
			FROM ingest_manifest WHERE run_id = r.run_id
		) m`

func scanRun(row pgx.CollectableRow) (runRow, error) {
	var r runRow
	err := row.Scan(&r.RunID, &r.Source, &r.Status, &r.StartedAt, &r.FinishedAt, &r.HeartbeatAt, &r.Documents, &r.Published, &r.Stored,
		&r.Parked, &r.HaltedReason, &r.Pending, &r.ManifestStored, &r.ManifestParked,
		&r.Deleted, &r.DeletedIDs)
	return r, err
}

// listRuns reads the newest runs (only running ones with running).
func listRuns(ctx context.Context, pool *pgxpool.Pool, source string, running bool, limit int) ([]runRow, error) {
	rows, err := pool.Query(ctx, runColumns+`
		WHERE ($1 = '' OR r.source_id = $1) AND (NOT $2 OR r.status = 'running')
		ORDER BY r.started_at DESC, r.run_id DESC LIMIT $3`, source, running, limit)
	if err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	runs, err := pgx.CollectRows(rows, scanRun)
	if err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	if err := countDeadLetters(ctx, pool, runs); err != nil {
		return nil, err
	}
	return runs, nil
}

// countDeadLetters sets each run's DeadLetters, its unresolved ones.
func countDeadLetters(ctx context.Context, pool *pgxpool.Pool, runs []runRow) error {
	ids := make([]string, len(runs))
	for i, r := range runs {
		ids[i] = r.RunID
	}
	open, err := deadletter.OpenByRun(ctx, pool, ids)
	if err != nil {
		return err
	}
	for i := range runs {
		runs[i].DeadLetters = open[runs[i].RunID]
	}
	return nil
}

// runDetail is one run, what it did with the files it met (nil when not
// recorded), and its unresolved dead letters by class.
type runDetail struct {
	runRow
	Files   *runs.Files
	ByClass []classCount
}

func readRun(ctx context.Context, pool *pgxpool.Pool, id string) (*runDetail, error) {
	rows, err := pool.Query(ctx, runColumns+` WHERE r.run_id = $1`, id)
	if err != nil {
		return nil, fmt.Errorf("read run: %w", err)
	}
	r, err := pgx.CollectExactlyOneRow(rows, scanRun)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, errNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("read run: %w", err)
	}
	one := []runRow{r}
	if err := countDeadLetters(ctx, pool, one); err != nil {
		return nil, err
	}
	d := &runDetail{runRow: one[0]}
	if d.Files, err = runs.ReadFiles(ctx, pool, id); err != nil {
		return nil, err
	}
	classes, err := deadletter.OpenOfRun(ctx, pool, id)
	if err != nil {
		return nil, err
	}
	for _, c := range classes {
		d.ByClass = append(d.ByClass, classCount(c))
	}
	return d, nil
}
