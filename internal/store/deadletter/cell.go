package deadletter

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Cell is the dead letters of one source and error class that last
// failed in a window, with the newest few as examples.
type Cell struct {
	Source, ErrorClass string
	Count, Unresolved  int
	Examples           []Example
}

// Example names one dead letter.
type Example struct {
	ID, Source, ErrorClass, NativeID string
}

// Cells reads the dead letters that last failed in [from, to) by source
// and error class, each with its newest examples (at most examples).
func Cells(ctx context.Context, q Reader, from, to time.Time, examples int) ([]Cell, error) {
	rows, err := q.Query(ctx, `
		WITH w AS (
			SELECT source_id, error_class, dead_letter_id, source_native_id, resolved_at,
			       row_number() OVER (PARTITION BY source_id, error_class
			                          ORDER BY last_failed_at DESC, dead_letter_id) AS rn
			FROM dead_letters
			WHERE last_failed_at >= $1 AND last_failed_at < $2
		)
		SELECT source_id, error_class, count(*), count(*) FILTER (WHERE resolved_at IS NULL),
		       array_agg(dead_letter_id ORDER BY rn) FILTER (WHERE rn <= $3),
		       array_agg(source_native_id ORDER BY rn) FILTER (WHERE rn <= $3)
		FROM w
		GROUP BY source_id, error_class`, from, to, examples)
	if err != nil {
		return nil, fmt.Errorf("dead letters by source and class: %w", err)
	}
	defer rows.Close()
	var cells []Cell
	for rows.Next() {
		var c Cell
		var ids, natives []string
		if err := rows.Scan(&c.Source, &c.ErrorClass, &c.Count, &c.Unresolved, &ids, &natives); err != nil {
			return nil, fmt.Errorf("dead letters by source and class: %w", err)
		}
		for i := range ids {
			c.Examples = append(c.Examples, Example{ID: ids[i], Source: c.Source, ErrorClass: c.ErrorClass, NativeID: natives[i]})
		}
		cells = append(cells, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("dead letters by source and class: %w", err)
	}
	return cells, nil
}

// CountsSince counts the dead letters that last failed at or after from,
// by source and error class.
func CountsSince(ctx context.Context, q Reader, from time.Time) (map[string]map[string]int, error) {
	rows, err := q.Query(ctx, `
		SELECT source_id, error_class, count(*) FROM dead_letters WHERE last_failed_at >= $1 GROUP BY 1, 2`, from)
	if err != nil {
		return nil, fmt.Errorf("shape: %w", err)
	}
	out := map[string]map[string]int{}
	var s, class string
	var n int
	if _, err := pgx.ForEachRow(rows, []any{&s, &class, &n}, func() error {
		if out[s] == nil {
			out[s] = map[string]int{}
		}
		out[s][class] += n
		return nil
	}); err != nil {
		return nil, fmt.Errorf("shape: %w", err)
	}
	return out, nil
}

// NewestBySource returns the newest perSource dead letters of each source
// that last failed at or after from, at most limit in all, by source.
func NewestBySource(ctx context.Context, q Reader, from time.Time, perSource, limit int) ([]Example, error) {
	rows, err := q.Query(ctx, `
		SELECT dead_letter_id, source_id, error_class, source_native_id FROM (
			SELECT dead_letter_id, source_id, error_class, source_native_id,
			       row_number() OVER (PARTITION BY source_id ORDER BY last_failed_at DESC, dead_letter_id) rn
			FROM dead_letters WHERE last_failed_at >= $1) w
		WHERE rn <= $2 ORDER BY source_id, rn LIMIT $3`, from, perSource, limit)
	if err != nil {
		return nil, fmt.Errorf("shape examples: %w", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[Example])
	if err != nil {
		return nil, fmt.Errorf("shape examples: %w", err)
	}
	return out, nil
}
