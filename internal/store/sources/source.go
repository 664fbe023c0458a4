package sources

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Kind is what a source reads, one of the values sources.kind admits.
type Kind string

// The kinds of source.
const (
	// KindTable is a PostgreSQL table of the application's database.
	KindTable Kind = "table"
	// KindDirectory is a directory the producer walks.
	KindDirectory Kind = "directory"
	// KindJSONL is a JSONL stream or file.
	KindJSONL Kind = "jsonl"
	// KindS3 is a prefix of an S3-compatible bucket.
	KindS3 Kind = "s3"
)

// LiveWindow is how recently a follower must have woken up for its source
// to count as live: several of its polls.
const LiveWindow = 2 * time.Minute

// ErrNotFound is a source that is not declared.
var ErrNotFound = errors.New("source not declared")

// ErrExists is a source declared twice.
var ErrExists = errors.New("source already declared")

// ErrOtherKind is a name declared as a source of another kind than the
// one a run reads.
var ErrOtherKind = errors.New("source declared as another kind")

// Querier is what the statements run on: a pool, a connection or a
// transaction.
type Querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// Source is one declared source.
type Source struct {
	Name string
	Kind Kind
	// Settings are the kind's settings, as JSON; see Table.
	Settings   json.RawMessage
	CreatedAt  time.Time
	LastSyncAt *time.Time
	LastError  string
	// Lag is the last sync's lag: from the oldest change it carried to
	// its publish. Nil before the first sync that carried a change.
	Lag *time.Duration
	// FollowedAt is a follower's last wake-up; nil when never followed.
	FollowedAt *time.Time
	// Live is whether a follower woke up within LiveWindow.
	Live bool
}

// Table are a table source's settings.
type Table struct {
	// DSN refers to the application database's connection string:
	// "env:NAME" (an environment variable of the process that reads the
	// table) or "file:PATH"; a DSN without a password may be given as is.
	DSN string `json:"dsn"`
	// Table is the table, schema-qualified: "public.articles".
	Table string `json:"table"`
	// ID is the primary key column, whose text is the document's native
	// id.
	ID string `json:"id"`
	// Text are the columns whose values, joined by blank lines, are the
	// document's text.
	Text []string `json:"text"`
	// Meta are the columns copied into the document's metadata.
	Meta []string `json:"meta,omitempty"`
	// Filter is an SQL condition on the table's rows; rows that do not
	// match it are not documents. Empty for every row.
	Filter string `json:"filter,omitempty"`
}

// S3 are an S3 source's settings, as its last run recorded them.
type S3 struct {
	// URL is the prefix read: s3://bucket/prefix.
	URL string `json:"url"`
	// Endpoint is the S3-compatible store's URL; empty for AWS.
	Endpoint string `json:"endpoint,omitempty"`
}

// columns lists Source's columns in the order scan reads them.
const columns = `name, kind, settings, created_at, last_sync_at, coalesce(last_error, ''), lag_seconds, followed_at,
	coalesce(followed_at > now() - make_interval(secs => $1), false)`

func scan(row pgx.Row) (Source, error) {
	var s Source
	var lag *float64
	err := row.Scan(&s.Name, &s.Kind, &s.Settings, &s.CreatedAt, &s.LastSyncAt, &s.LastError, &lag, &s.FollowedAt, &s.Live)
	if lag != nil {
		d := time.Duration(*lag * float64(time.Second))
		s.Lag = &d
	}
	return s, err
}

// Add declares a source; ErrExists if one of that name is declared.
func Add(ctx context.Context, q Querier, name string, kind Kind, settings any) error {
	raw, err := json.Marshal(settings)
	if err != nil {
		return fmt.Errorf("declare source %s: %w", name, err)
	}
	tag, err := q.Exec(ctx, `INSERT INTO sources (name, kind, settings) VALUES ($1, $2, $3) ON CONFLICT (name) DO NOTHING`, name, kind, raw)
	if err != nil {
		return fmt.Errorf("declare source %s: %w", name, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("%w: %s", ErrExists, name)
	}
	return nil
}

// RecordS3 declares the S3 source name with its settings, or records the
// settings of a run of the one declared: an S3 source is declared by its
// runs. A source of that name of another kind is left alone and refused
// with ErrOtherKind.
func RecordS3(ctx context.Context, q Querier, name string, settings S3) error {
	raw, err := json.Marshal(settings)
	if err != nil {
		return fmt.Errorf("record S3 source %s: %w", name, err)
	}
	tag, err := q.Exec(ctx, `INSERT INTO sources (name, kind, settings) VALUES ($1, $2, $3)
		ON CONFLICT (name) DO UPDATE SET settings = EXCLUDED.settings WHERE sources.kind = EXCLUDED.kind`, name, KindS3, raw)
	if err != nil {
		return fmt.Errorf("record S3 source %s: %w", name, err)
	}
	if tag.RowsAffected() == 1 {
		return nil
	}
	s, err := Get(ctx, q, name)
	if err != nil {
		return fmt.Errorf("record S3 source %s: %w", name, err)
	}
	return fmt.Errorf("%w: %s is a %s source", ErrOtherKind, name, s.Kind)
}

// Remove forgets a declared source; ErrNotFound if none has that name.
func Remove(ctx context.Context, q Querier, name string) error {
	tag, err := q.Exec(ctx, `DELETE FROM sources WHERE name = $1`, name)
	if err != nil {
		return fmt.Errorf("remove source %s: %w", name, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("%w: %s", ErrNotFound, name)
	}
	return nil
}

// Get reads a declared source; ErrNotFound if none has that name.
func Get(ctx context.Context, q Querier, name string) (Source, error) {
	s, err := scan(q.QueryRow(ctx, `SELECT `+columns+` FROM sources WHERE name = $2`, LiveWindow.Seconds(), name))
	if errors.Is(err, pgx.ErrNoRows) {
		return s, fmt.Errorf("%w: %s", ErrNotFound, name)
	}
	if err != nil {
		return s, fmt.Errorf("read source %s: %w", name, err)
	}
	return s, nil
}

// GetTable reads a declared table source and its settings.
func GetTable(ctx context.Context, q Querier, name string) (Table, error) {
	s, err := Get(ctx, q, name)
	if err != nil {
		return Table{}, err
	}
	if s.Kind != KindTable {
		return Table{}, fmt.Errorf("source %s is a %s source, not a table", name, s.Kind)
	}
	var t Table
	if err := json.Unmarshal(s.Settings, &t); err != nil {
		return t, fmt.Errorf("source %s: settings: %w", name, err)
	}
	return t, nil
}

// List reads every declared source, by name.
func List(ctx context.Context, q Querier) ([]Source, error) {
	rows, err := q.Query(ctx, `SELECT `+columns+` FROM sources ORDER BY name`, LiveWindow.Seconds())
	if err != nil {
		return nil, fmt.Errorf("list sources: %w", err)
	}
	defer rows.Close()
	var out []Source
	for rows.Next() {
		s, err := scan(rows)
		if err != nil {
			return nil, fmt.Errorf("list sources: %w", err)
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list sources: %w", err)
	}
	return out, nil
}

// RecordSync records the end of a sync of a declared source: its time,
// its lag when it carried changes (nil otherwise keeps the last), and its
// error, empty when it succeeded. An undeclared source is left alone.
func RecordSync(ctx context.Context, q Querier, name string, lag *time.Duration, syncErr error) error {
	var lagSecs *float64
	if lag != nil {
		s := max(lag.Seconds(), 0)
		lagSecs = &s
	}
	var msg *string
	if syncErr != nil {
		m := syncErr.Error()
		msg = &m
	}
	_, err := q.Exec(ctx, `UPDATE sources SET last_sync_at = CASE WHEN $4 THEN now() ELSE last_sync_at END,
		last_error = $2, lag_seconds = coalesce($3, lag_seconds) WHERE name = $1`, name, msg, lagSecs, syncErr == nil)
	if err != nil {
		return fmt.Errorf("record sync of source %s: %w", name, err)
	}
	return nil
}

// Followed records that a follower of the source woke up.
func Followed(ctx context.Context, q Querier, name string) error {
	if _, err := q.Exec(ctx, `UPDATE sources SET followed_at = now() WHERE name = $1`, name); err != nil {
		return fmt.Errorf("record follower of source %s: %w", name, err)
	}
	return nil
}
