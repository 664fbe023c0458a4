package console

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sluicehq/sluice/internal/failure/replay"
)

// Sort orders of the dead-letter list.
const (
	sortNewest   = "newest"
	sortOldest   = "oldest"
	sortAttempts = "attempts"
)

// cursor is a keyset position: the sort key of the last row shown.
type cursor struct {
	at       time.Time
	attempts int
	id       string
}

func (c cursor) String() string {
	raw := c.at.UTC().Format(time.RFC3339Nano) + "|" + strconv.Itoa(c.attempts) + "|" + c.id
	return base64.RawURLEncoding.EncodeToString([]byte(raw))
}

func parseCursor(s string) (*cursor, error) {
	if s == "" {
		return nil, nil
	}
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return nil, errors.New("bad page cursor")
	}
	parts := strings.SplitN(string(raw), "|", 3)
	if len(parts) != 3 {
		return nil, errors.New("bad page cursor")
	}
	at, err := time.Parse(time.RFC3339Nano, parts[0])
	if err != nil {
		return nil, errors.New("bad page cursor")
	}
	n, err := strconv.Atoi(parts[1])
	if err != nil {
		return nil, errors.New("bad page cursor")
	}
	return &cursor{at: at, attempts: n, id: parts[2]}, nil
}

// listQuery is one page request of the dead-letter list.
type listQuery struct {
	replay.Filter
	Sort  string
	After *cursor
	Limit int
}

// listItem is one row of the dead-letter list.
type listItem struct {
	ID, DocID, Source, NativeID, Disposition, ErrorClass, Stage string
	RunID, ErrorDetail                                          *string
	ChunkIndex, Attempts, ReplayGen                             int
	LastFailedAt                                                time.Time
	NextRetryAt                                                 *time.Time
	State                                                       string
}

// stateSQL names a row's replay state, as replay.Filter selects them.
const stateSQL = `CASE WHEN d.resolved_at IS NOT NULL THEN 'resolved'
	WHEN d.replayed_at >= d.last_failed_at THEN 'dispatched'
	WHEN d.next_retry_at IS NULL THEN 'manual'
	WHEN d.next_retry_at <= now() THEN 'ready'
	ELSE 'backing_off' END`

// listPage reads one keyset page; next is set when more rows follow.
func listPage(ctx context.Context, pool *pgxpool.Pool, q listQuery) (items []listItem, next *cursor, err error) {
	var args replay.Args
	where := q.Where(&args)
	order := "d.last_failed_at DESC, d.dead_letter_id DESC"
	if q.After != nil {
		switch q.Sort {
		case sortOldest:
			where += fmt.Sprintf(" AND (d.last_failed_at, d.dead_letter_id) > (%s, %s)", args.Add(q.After.at), args.Add(q.After.id))
		case sortAttempts:
			where += fmt.Sprintf(" AND (d.attempts, d.last_failed_at, d.dead_letter_id) < (%s, %s, %s)",
				args.Add(q.After.attempts), args.Add(q.After.at), args.Add(q.After.id))
		default:
			where += fmt.Sprintf(" AND (d.last_failed_at, d.dead_letter_id) < (%s, %s)", args.Add(q.After.at), args.Add(q.After.id))
		}
	}
	switch q.Sort {
	case sortOldest:
		order = "d.last_failed_at, d.dead_letter_id"
	case sortAttempts:
		order = "d.attempts DESC, d.last_failed_at DESC, d.dead_letter_id DESC"
	}
	rows, err := pool.Query(ctx, `
		SELECT d.dead_letter_id, d.doc_id, d.source_id, d.source_native_id, d.disposition, d.error_class, d.stage,
		       d.run_id, d.error_detail, d.chunk_index, d.attempts, d.replay_gen, d.last_failed_at, d.next_retry_at, `+stateSQL+`
		FROM dead_letters d WHERE `+where+` ORDER BY `+order+` LIMIT `+args.Add(q.Limit+1), args...)
	if err != nil {
		return nil, nil, fmt.Errorf("list dead letters: %w", err)
	}
	items, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (listItem, error) {
		var it listItem
		err := r.Scan(&it.ID, &it.DocID, &it.Source, &it.NativeID, &it.Disposition, &it.ErrorClass, &it.Stage,
			&it.RunID, &it.ErrorDetail, &it.ChunkIndex, &it.Attempts, &it.ReplayGen, &it.LastFailedAt, &it.NextRetryAt, &it.State)
		return it, err
	})
	if err != nil {
		return nil, nil, fmt.Errorf("list dead letters: %w", err)
	}
	if len(items) > q.Limit {
		items = items[:q.Limit]
		last := items[len(items)-1]
		next = &cursor{at: last.LastFailedAt, attempts: last.Attempts, id: last.ID}
	}
	return items, next, nil
}

// countMatching counts the dead letters the filter matches, stopping at
// limit (0: no limit): an exact count of a million rows costs a scan, and
// "more than 100,000" is all a list page needs to say. capped reports that
// the count stopped there.
func countMatching(ctx context.Context, pool *pgxpool.Pool, f replay.Filter, limit int64) (n int64, capped bool, err error) {
	var args replay.Args
	where := f.Where(&args)
	sql := `SELECT count(*) FROM dead_letters d WHERE ` + where
	if limit > 0 {
		sql = `SELECT count(*) FROM (SELECT 1 FROM dead_letters d WHERE ` + where + ` LIMIT ` + args.Add(limit+1) + `) x`
	}
	if err := pool.QueryRow(ctx, sql, args...).Scan(&n); err != nil {
		return 0, false, fmt.Errorf("count dead letters: %w", err)
	}
	if limit > 0 && n > limit {
		return limit, true, nil
	}
	return n, false, nil
}

// filterChoices are the values the list's selects offer.
type filterChoices struct {
	Sources, Classes, Stages []string
}

func readChoices(ctx context.Context, pool *pgxpool.Pool) (filterChoices, error) {
	var c filterChoices
	// A loose index scan per column: one index probe per distinct value,
	// so the cost follows the number of values, not of rows.
	distinct := func(col string) string {
		return `(WITH RECURSIVE v AS (
			(SELECT ` + col + ` AS x FROM dead_letters ORDER BY ` + col + ` LIMIT 1)
			UNION ALL
			SELECT (SELECT ` + col + ` FROM dead_letters WHERE ` + col + ` > v.x ORDER BY ` + col + ` LIMIT 1) FROM v WHERE v.x IS NOT NULL)
			SELECT coalesce(array_agg(x ORDER BY x), '{}') FROM v WHERE x IS NOT NULL)`
	}
	err := pool.QueryRow(ctx, `SELECT `+distinct("source_id")+`, `+distinct("error_class")+`, `+distinct("stage")).
		Scan(&c.Sources, &c.Classes, &c.Stages)
	if err != nil {
		return c, fmt.Errorf("filter choices: %w", err)
	}
	return c, nil
}
