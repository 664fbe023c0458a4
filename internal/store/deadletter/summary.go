package deadletter

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Summary is one dead letter as a listing shows it: what failed, how,
// and its State. Times are UTC.
type Summary struct {
	ID, DocID, Source, NativeID, Disposition, ErrorClass, Stage string
	RunID, ErrorCode, ErrorDetail                               *string
	ChunkIndex, Attempts, ReplayGen                             int
	FirstFailedAt, LastFailedAt                                 time.Time
	NextRetryAt, ReplayedAt, ResolvedAt                         *time.Time
	State                                                       State
}

// summaryColumns are Summary's columns, in scanSummary's order, on
// dead_letters aliased d.
var summaryColumns = `d.dead_letter_id, d.doc_id, d.source_id, d.source_native_id, d.disposition, d.error_class, d.stage,
	d.run_id, d.error_code, d.error_detail, d.chunk_index, d.attempts, d.replay_gen,
	d.first_failed_at, d.last_failed_at, d.next_retry_at, d.replayed_at, d.resolved_at, ` + StateSQL()

// fields are the scan targets of summaryColumns.
func (s *Summary) fields() []any {
	return []any{&s.ID, &s.DocID, &s.Source, &s.NativeID, &s.Disposition, &s.ErrorClass, &s.Stage,
		&s.RunID, &s.ErrorCode, &s.ErrorDetail, &s.ChunkIndex, &s.Attempts, &s.ReplayGen,
		&s.FirstFailedAt, &s.LastFailedAt, &s.NextRetryAt, &s.ReplayedAt, &s.ResolvedAt, &s.State}
}

// utc turns every time of s to UTC.
func (s *Summary) utc() {
	s.FirstFailedAt, s.LastFailedAt = s.FirstFailedAt.UTC(), s.LastFailedAt.UTC()
	for _, t := range []**time.Time{&s.NextRetryAt, &s.ReplayedAt, &s.ResolvedAt} {
		*t = utcPtr(*t)
	}
}

func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

// List returns at most limit of the dead letters f selects, newest
// failure first (ties by id), and how many f selects in all.
func List(ctx context.Context, q Reader, f Filter, limit int) ([]Summary, int64, error) {
	var args Args
	rows, err := q.Query(ctx, `
		SELECT `+summaryColumns+`, count(*) OVER ()
		FROM dead_letters d WHERE `+f.Where(&args)+`
		ORDER BY d.last_failed_at DESC, d.dead_letter_id
		LIMIT `+args.Add(limit), args...)
	if err != nil {
		return nil, 0, fmt.Errorf("list dead letters: %w", err)
	}
	var matched int64
	list, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Summary, error) {
		var s Summary
		err := r.Scan(append(s.fields(), &matched)...)
		s.utc()
		return s, err
	})
	if err != nil {
		return nil, 0, fmt.Errorf("list dead letters: %w", err)
	}
	return list, matched, nil
}

// Sort orders of Page.
const (
	// SortNewest is the newest failure first. It is the default.
	SortNewest = "newest"
	// SortOldest is the oldest failure first.
	SortOldest = "oldest"
	// SortAttempts is the most attempts first, then the newest failure.
	SortAttempts = "attempts"
)

// Cursor is a keyset position: the sort key of the last row a page showed.
type Cursor struct {
	At       time.Time
	Attempts int
	ID       string
}

// PageQuery is one page of a listing.
type PageQuery struct {
	Filter
	// Sort is SortNewest (the default for any other value), SortOldest or
	// SortAttempts.
	Sort string
	// After is the previous page's last row; nil for the first page.
	After *Cursor
	// Limit is the page size.
	Limit int
}

// Page reads one keyset page of the dead letters p selects; next is set
// when more rows follow.
func Page(ctx context.Context, q Reader, p PageQuery) (items []Summary, next *Cursor, err error) {
	var args Args
	where := p.Where(&args)
	order := "d.last_failed_at DESC, d.dead_letter_id DESC"
	if p.After != nil {
		switch p.Sort {
		case SortOldest:
			where += fmt.Sprintf(" AND (d.last_failed_at, d.dead_letter_id) > (%s, %s)", args.Add(p.After.At), args.Add(p.After.ID))
		case SortAttempts:
			where += fmt.Sprintf(" AND (d.attempts, d.last_failed_at, d.dead_letter_id) < (%s, %s, %s)",
				args.Add(p.After.Attempts), args.Add(p.After.At), args.Add(p.After.ID))
		default:
			where += fmt.Sprintf(" AND (d.last_failed_at, d.dead_letter_id) < (%s, %s)", args.Add(p.After.At), args.Add(p.After.ID))
		}
	}
	switch p.Sort {
	case SortOldest:
		order = "d.last_failed_at, d.dead_letter_id"
	case SortAttempts:
		order = "d.attempts DESC, d.last_failed_at DESC, d.dead_letter_id DESC"
	}
	rows, err := q.Query(ctx, `SELECT `+summaryColumns+`
		FROM dead_letters d WHERE `+where+` ORDER BY `+order+` LIMIT `+args.Add(p.Limit+1), args...)
	if err != nil {
		return nil, nil, fmt.Errorf("list dead letters: %w", err)
	}
	items, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (Summary, error) {
		var s Summary
		err := r.Scan(s.fields()...)
		return s, err
	})
	if err != nil {
		return nil, nil, fmt.Errorf("list dead letters: %w", err)
	}
	if len(items) > p.Limit {
		items = items[:p.Limit]
		last := items[len(items)-1]
		next = &Cursor{At: last.LastFailedAt, Attempts: last.Attempts, ID: last.ID}
	}
	return items, next, nil
}

// Count counts the dead letters f selects, stopping at limit (0: no
// limit): an exact count of a million rows costs a scan, and "more than
// 100,000" is all a page needs to say. capped reports that the count
// stopped there.
func Count(ctx context.Context, q Reader, f Filter, limit int64) (n int64, capped bool, err error) {
	var args Args
	where := f.Where(&args)
	sql := `SELECT count(*) FROM dead_letters d WHERE ` + where
	if limit > 0 {
		sql = `SELECT count(*) FROM (SELECT 1 FROM dead_letters d WHERE ` + where + ` LIMIT ` + args.Add(limit+1) + `) x`
	}
	if err := q.QueryRow(ctx, sql, args...).Scan(&n); err != nil {
		return 0, false, fmt.Errorf("count dead letters: %w", err)
	}
	if limit > 0 && n > limit {
		return limit, true, nil
	}
	return n, false, nil
}

// Choices are the distinct sources, error classes and stages of the
// dead letters, sorted: what a filter form offers.
type Choices struct {
	Sources, Classes, Stages []string
}

// ReadChoices reads the Choices.
func ReadChoices(ctx context.Context, q Reader) (Choices, error) {
	var c Choices
	// A loose index scan per column: one index probe per distinct value,
	// so the cost follows the number of values, not of rows.
	distinct := func(col string) string {
		return `(WITH RECURSIVE v AS (
			(SELECT ` + col + ` AS x FROM dead_letters ORDER BY ` + col + ` LIMIT 1)
			UNION ALL
			SELECT (SELECT ` + col + ` FROM dead_letters WHERE ` + col + ` > v.x ORDER BY ` + col + ` LIMIT 1) FROM v WHERE v.x IS NOT NULL)
			SELECT coalesce(array_agg(x ORDER BY x), '{}') FROM v WHERE x IS NOT NULL)`
	}
	err := q.QueryRow(ctx, `SELECT `+distinct("source_id")+`, `+distinct("error_class")+`, `+distinct("stage")).
		Scan(&c.Sources, &c.Classes, &c.Stages)
	if err != nil {
		return c, fmt.Errorf("filter choices: %w", err)
	}
	return c, nil
}
