package runs

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Files is what a run did with the files its walk met: every file is
// read, excluded by a rule, or parked, so Seen is Read + Parked + the sum
// of Excluded.
type Files struct {
	// Seen is how many files (and directories not entered) the walk met.
	Seen int `json:"seen"`
	// Read is how many were read: recorded as documents, or as JSONL
	// records.
	Read int `json:"read"`
	// Excluded counts the files left out, by the rule that left them out
	// (corpus.Exclusion).
	Excluded map[string]int `json:"excluded"`
	// Parked is how many were parked whole, as document-level dead
	// letters.
	Parked int `json:"parked"`
	// OCR is how many of those read or parked were scans or images that
	// OCR read; OCRLow how many of them were parked below their source's
	// bar (ocr_low_confidence), waiting for a person to key, accept or
	// re-read them; Keyed how many were stored from keyed text.
	OCR    int `json:"ocr"`
	OCRLow int `json:"ocr_low_confidence"`
	Keyed  int `json:"keyed"`
}

// ExcludedTotal is the sum of Excluded.
func (f Files) ExcludedTotal() int {
	n := 0
	for _, c := range f.Excluded {
		n += c
	}
	return n
}

// String renders f on one line: seen, read, excluded (by reason, the
// most frequent first), parked.
func (f Files) String() string {
	reasons := slices.Collect(maps.Keys(f.Excluded))
	slices.SortFunc(reasons, func(a, b string) int {
		return cmp.Or(cmp.Compare(f.Excluded[b], f.Excluded[a]), cmp.Compare(a, b))
	})
	var parts []string
	for _, r := range reasons {
		if f.Excluded[r] > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", r, f.Excluded[r]))
		}
	}
	excluded := ""
	if len(parts) > 0 {
		excluded = " (" + strings.Join(parts, ", ") + ")"
	}
	out := fmt.Sprintf("%d seen, %d read, %d excluded%s, %d parked", f.Seen, f.Read, f.ExcludedTotal(), excluded, f.Parked)
	if f.OCR > 0 {
		out += fmt.Sprintf("; %d read by OCR, %d of them below the bar and waiting for a person (key, accept or re-read them: \"Scanned documents\" in docs/operations.md)", f.OCR, f.OCRLow)
	}
	if f.Keyed > 0 {
		out += fmt.Sprintf("; %d stored from keyed text", f.Keyed)
	}
	return out
}

// RecordFiles records what the run did with its files so far: with each
// batch, in its transaction, and once more as the run ends.
func RecordFiles(ctx context.Context, q interface {
	Exec(context.Context, string, ...any) (pgconn.CommandTag, error)
}, runID string, f Files) error {
	excluded := f.Excluded
	if excluded == nil {
		excluded = map[string]int{}
	}
	raw, err := json.Marshal(excluded)
	if err != nil {
		return fmt.Errorf("record the files of run %s: %w", runID, err)
	}
	if _, err := q.Exec(ctx, `
		UPDATE ingest_runs SET files_seen = $2, files_read = $3, files_parked = $4, files_excluded = $5,
			files_ocr = $6, files_ocr_low = $7, files_keyed = $8
		WHERE run_id = $1`, runID, f.Seen, f.Read, f.Parked, raw, f.OCR, f.OCRLow, f.Keyed); err != nil {
		return fmt.Errorf("record the files of run %s: %w", runID, err)
	}
	return nil
}

// ReadFiles returns what the run did with its files, or nil for a run
// recorded without them (before they were counted, or still running).
// It returns ErrNoRun for an unknown run.
func ReadFiles(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}, runID string) (*Files, error) {
	var seen, read, parked, ocr, low, keyed *int
	var excluded []byte
	err := q.QueryRow(ctx, `SELECT files_seen, files_read, files_parked, files_excluded, files_ocr, files_ocr_low, files_keyed
		FROM ingest_runs WHERE run_id = $1`, runID).
		Scan(&seen, &read, &parked, &excluded, &ocr, &low, &keyed)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("run %q: %w", runID, ErrNoRun)
	}
	if err != nil {
		return nil, fmt.Errorf("read the files of run %s: %w", runID, err)
	}
	if seen == nil {
		return nil, nil
	}
	f := &Files{Seen: *seen, Read: deref(read), Parked: deref(parked), Excluded: map[string]int{},
		OCR: deref(ocr), OCRLow: deref(low), Keyed: deref(keyed)}
	if len(excluded) > 0 {
		if err := json.Unmarshal(excluded, &f.Excluded); err != nil {
			return nil, fmt.Errorf("read the files of run %s: %w", runID, err)
		}
	}
	return f, nil
}

func deref(p *int) int {
	if p == nil {
		return 0
	}
	return *p
}

// KeyedBySource returns, for each source, how many parked documents its
// runs stored from text a person keyed in (files_keyed), all runs
// together; sources without any are left out.
func KeyedBySource(ctx context.Context, q interface {
	Query(context.Context, string, ...any) (pgx.Rows, error)
}) (map[string]int64, error) {
	rows, err := q.Query(ctx, `SELECT source_id, sum(files_keyed) FROM ingest_runs WHERE files_keyed > 0 GROUP BY source_id`)
	if err != nil {
		return nil, fmt.Errorf("read the keyed documents: %w", err)
	}
	out := map[string]int64{}
	for rows.Next() {
		var source string
		var n int64
		if err := rows.Scan(&source, &n); err != nil {
			rows.Close()
			return nil, fmt.Errorf("read the keyed documents: %w", err)
		}
		out[source] = n
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read the keyed documents: %w", err)
	}
	return out, nil
}

// Unaccounted returns the runs, at most 100, that ended completed while
// the files their walks met do not add up to those read, parked and
// excluded: a file a run met and did nothing visible with. A run records
// its last counts before it ends publishing, so a completed run's are
// final; a run interrupted or failed may have met files it never got
// to, and is not held to it.
func Unaccounted(ctx context.Context, q interface {
	Query(context.Context, string, ...any) (pgx.Rows, error)
}) ([]string, error) {
	rows, err := q.Query(ctx, `
		SELECT run_id FROM ingest_runs
		WHERE status IN ($1, $2) AND files_seen IS NOT NULL
		  AND files_seen <> files_read + files_parked
		      + (SELECT coalesce(sum(n::int), 0) FROM jsonb_each_text(files_excluded) AS e(reason, n))
		ORDER BY run_id LIMIT 100`, Completed, CompletedWithFailures)
	if err != nil {
		return nil, fmt.Errorf("runs with files unaccounted: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("runs with files unaccounted: %w", err)
	}
	return ids, nil
}
