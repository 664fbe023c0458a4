package runs

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Totals sums one source's runs.
type Totals struct {
	Runs, Documents, Published, Stored, Parked int
	// OCR counts the files read by OCR, Keyed those stored from keyed
	// text (files_ocr, files_keyed).
	OCR, Keyed int
}

// TotalsBySource sums the runs started in [since, until) by source.
func TotalsBySource(ctx context.Context, q interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}, since, until time.Time) (map[string]Totals, error) {
	rows, err := q.Query(ctx, `
		SELECT source_id, count(*), sum(documents), sum(published), sum(stored), sum(parked),
			coalesce(sum(files_ocr), 0), coalesce(sum(files_keyed), 0)
		FROM ingest_runs WHERE started_at >= $1 AND started_at < $2
		GROUP BY source_id`, since, until)
	if err != nil {
		return nil, fmt.Errorf("runs by source: %w", err)
	}
	out := map[string]Totals{}
	var id string
	var t Totals
	if _, err := pgx.ForEachRow(rows, []any{&id, &t.Runs, &t.Documents, &t.Published, &t.Stored, &t.Parked, &t.OCR, &t.Keyed}, func() error {
		out[id] = t
		return nil
	}); err != nil {
		return nil, fmt.Errorf("runs by source: %w", err)
	}
	return out, nil
}

// ActiveSources returns the sources with a run overlapping [from, to):
// started before to and not finished before from.
func ActiveSources(ctx context.Context, q interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}, from, to time.Time) ([]string, error) {
	rows, err := q.Query(ctx, `
		SELECT DISTINCT source_id FROM ingest_runs
		WHERE started_at < $2 AND (finished_at IS NULL OR finished_at >= $1)`, from, to)
	if err != nil {
		return nil, fmt.Errorf("active sources: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("active sources: %w", err)
	}
	return ids, nil
}
