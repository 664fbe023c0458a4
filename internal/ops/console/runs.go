package console

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sluicehq/sluice/internal/store/deadletter"
	"github.com/sluicehq/sluice/internal/store/erase"
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

// newRunRow is run r as the Runs pages show it, before its live counts.
func newRunRow(r runs.Run) runRow {
	return runRow{RunID: r.RunID, Source: r.SourceID, Status: string(r.Status), StartedAt: r.StartedAt, FinishedAt: r.FinishedAt,
		HeartbeatAt: r.HeartbeatAt, Documents: r.Documents, Published: r.Published, Stored: r.Stored, Parked: r.Parked,
		HaltedReason: r.HaltedReason}
}

// listRuns reads the newest runs (only running ones with running).
func listRuns(ctx context.Context, pool *pgxpool.Pool, source string, running bool, limit int) ([]runRow, error) {
	list, err := runs.List(ctx, pool, runs.Filter{Source: source, Running: running, Limit: limit})
	if err != nil {
		return nil, err
	}
	out := make([]runRow, len(list))
	for i, r := range list {
		out[i] = newRunRow(r)
	}
	if err := countRuns(ctx, pool, out); err != nil {
		return nil, err
	}
	return out, nil
}

// countRuns sets what each run's row in ingest_runs does not hold: its
// chunks counted live in the manifest, its unresolved dead letters
// (DeadLetters) and the documents it deleted.
func countRuns(ctx context.Context, pool *pgxpool.Pool, list []runRow) error {
	ids := make([]string, len(list))
	for i, r := range list {
		ids[i] = r.RunID
	}
	chunks, err := manifest.ChunksByRun(ctx, pool, ids)
	if err != nil {
		return err
	}
	open, err := deadletter.OpenByRun(ctx, pool, ids)
	if err != nil {
		return err
	}
	deleted, err := erase.DeletesByRun(ctx, pool, ids, runDeletedShown)
	if err != nil {
		return err
	}
	for i := range list {
		r := &list[i]
		c := chunks[r.RunID]
		r.Pending, r.ManifestStored, r.ManifestParked = c.Pending, c.Stored, c.Parked
		r.DeadLetters = open[r.RunID]
		r.Deleted, r.DeletedIDs = deleted[r.RunID].Count, deleted[r.RunID].NativeIDs
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

// readRun reads run id with its live counts, the files it met and its
// unresolved dead letters by class; errNotFound for an unknown run.
func readRun(ctx context.Context, pool *pgxpool.Pool, id string) (*runDetail, error) {
	r, err := runs.Read(ctx, pool, id)
	if errors.Is(err, runs.ErrNoRun) {
		return nil, errNotFound
	}
	if err != nil {
		return nil, err
	}
	one := []runRow{newRunRow(r)}
	if err := countRuns(ctx, pool, one); err != nil {
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
