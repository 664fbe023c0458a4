package quality

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/jackc/pgx/v5"
)

// Querier is what Build reads with: a pool, a connection or a transaction.
type Querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// Report is the quality of every source over [Since, Until).
type Report struct {
	Since   time.Time `json:"since"`
	Until   time.Time `json:"until"`
	Sources []Source  `json:"sources"`
}

// Source is one source's figures over a report's window.
type Source struct {
	SourceID string `json:"source_id"`
	// Runs, Documents, Published, Stored and Parked sum the source's
	// ingest runs started in the window.
	Runs      int `json:"runs"`
	Documents int `json:"documents"`
	Published int `json:"published"`
	Stored    int `json:"stored"`
	Parked    int `json:"parked"`
	// ParkedShare is Parked / Published, 0 when nothing was published.
	ParkedShare float64 `json:"parked_share"`
	// DeadLetters counts the dead letters that last failed in the window,
	// Open those of them not resolved yet, WorstAttempts the most
	// attempts any of them took.
	DeadLetters   int `json:"dead_letters"`
	Open          int `json:"open"`
	WorstAttempts int `json:"worst_attempts"`
	// ByClass splits DeadLetters by error class.
	ByClass map[string]int `json:"by_class"`
}

// Build reads the report of [since, until).
func Build(ctx context.Context, db Querier, since, until time.Time) (*Report, error) {
	if !since.Before(until) {
		return nil, fmt.Errorf("quality report: the window [%s, %s) is empty", since.Format(time.RFC3339), until.Format(time.RFC3339))
	}
	sources := map[string]*Source{}
	source := func(id string) *Source {
		if sources[id] == nil {
			sources[id] = &Source{SourceID: id, ByClass: map[string]int{}}
		}
		return sources[id]
	}
	rows, err := db.Query(ctx, `
		SELECT source_id, count(*), sum(documents), sum(published), sum(stored), sum(parked)
		FROM ingest_runs WHERE started_at >= $1 AND started_at < $2
		GROUP BY source_id`, since, until)
	if err != nil {
		return nil, fmt.Errorf("quality report: runs: %w", err)
	}
	var id string
	var runs, docs, published, stored, parked int
	if _, err := pgx.ForEachRow(rows, []any{&id, &runs, &docs, &published, &stored, &parked}, func() error {
		s := source(id)
		s.Runs, s.Documents, s.Published, s.Stored, s.Parked = runs, docs, published, stored, parked
		return nil
	}); err != nil {
		return nil, fmt.Errorf("quality report: runs: %w", err)
	}
	rows, err = db.Query(ctx, `
		SELECT source_id, error_class, count(*), count(*) FILTER (WHERE resolved_at IS NULL), max(attempts)
		FROM dead_letters WHERE last_failed_at >= $1 AND last_failed_at < $2
		GROUP BY source_id, error_class`, since, until)
	if err != nil {
		return nil, fmt.Errorf("quality report: dead letters: %w", err)
	}
	var class string
	var n, open, worst int
	if _, err := pgx.ForEachRow(rows, []any{&id, &class, &n, &open, &worst}, func() error {
		s := source(id)
		s.ByClass[class] = n
		s.DeadLetters += n
		s.Open += open
		s.WorstAttempts = max(s.WorstAttempts, worst)
		return nil
	}); err != nil {
		return nil, fmt.Errorf("quality report: dead letters: %w", err)
	}
	rep := &Report{Since: since.UTC(), Until: until.UTC(), Sources: make([]Source, 0, len(sources))}
	for _, s := range sources {
		if s.Published > 0 {
			s.ParkedShare = float64(s.Parked) / float64(s.Published)
		}
		rep.Sources = append(rep.Sources, *s)
	}
	sort.Slice(rep.Sources, func(i, j int) bool { return rep.Sources[i].SourceID < rep.Sources[j].SourceID })
	return rep, nil
}
