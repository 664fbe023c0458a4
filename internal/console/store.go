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

	"github.com/sluicehq/sluice/internal/replay"
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

// countMatching counts every dead letter the filter matches.
func countMatching(ctx context.Context, pool *pgxpool.Pool, f replay.Filter) (int64, error) {
	var args replay.Args
	var n int64
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM dead_letters d WHERE `+f.Where(&args), args...).Scan(&n); err != nil {
		return 0, fmt.Errorf("count dead letters: %w", err)
	}
	return n, nil
}

// filterChoices are the values the list's selects offer.
type filterChoices struct {
	Sources, Classes, Stages []string
}

func readChoices(ctx context.Context, pool *pgxpool.Pool) (filterChoices, error) {
	var c filterChoices
	// A loose index scan would be faster on huge tables; these columns
	// have few distinct values and their indexes make this cheap enough.
	err := pool.QueryRow(ctx, `
		SELECT (SELECT coalesce(array_agg(s ORDER BY s), '{}') FROM (SELECT DISTINCT source_id s FROM dead_letters) x),
		       (SELECT coalesce(array_agg(s ORDER BY s), '{}') FROM (SELECT DISTINCT error_class s FROM dead_letters) x),
		       (SELECT coalesce(array_agg(s ORDER BY s), '{}') FROM (SELECT DISTINCT stage s FROM dead_letters) x)`).
		Scan(&c.Sources, &c.Classes, &c.Stages)
	if err != nil {
		return c, fmt.Errorf("filter choices: %w", err)
	}
	return c, nil
}
