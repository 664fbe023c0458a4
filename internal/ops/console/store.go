package console

import (
	"context"
	"encoding/base64"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sluicehq/sluice/internal/store/deadletter"
)

// Sort orders of the dead-letter list.
const (
	sortNewest   = deadletter.SortNewest
	sortOldest   = deadletter.SortOldest
	sortAttempts = deadletter.SortAttempts
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
	deadletter.Filter
	Sort  string
	After *cursor
	Limit int
}

// listItem is one row of the dead-letter list.
type listItem = deadletter.Summary

// listPage reads one keyset page; next is set when more rows follow.
func listPage(ctx context.Context, pool *pgxpool.Pool, q listQuery) ([]listItem, *cursor, error) {
	p := deadletter.PageQuery{Filter: q.Filter, Sort: q.Sort, Limit: q.Limit}
	if q.After != nil {
		p.After = &deadletter.Cursor{At: q.After.at, Attempts: q.After.attempts, ID: q.After.id}
	}
	items, next, err := deadletter.Page(ctx, pool, p)
	if err != nil || next == nil {
		return items, nil, err
	}
	return items, &cursor{at: next.At, attempts: next.Attempts, id: next.ID}, nil
}
