package quality

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/sluicehq/sluice/internal/store/deadletter"
	"github.com/sluicehq/sluice/internal/store/runs"
	"github.com/sluicehq/sluice/pkg/classify"
)

// Querier is what Build reads with: a pool, a connection or a transaction.
type Querier = deadletter.Reader

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
	// OCR counts the files of the window's runs that OCR read, Keyed
	// those stored from keyed text; WaitingForKeying the scans parked
	// below the bar (ocr_low_confidence) in the window and not resolved
	// yet: keyed, accepted or re-read.
	OCR              int `json:"ocr_documents"`
	Keyed            int `json:"keyed_documents"`
	WaitingForKeying int `json:"waiting_for_keying"`
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
	totals, err := runs.TotalsBySource(ctx, db, since, until)
	if err != nil {
		return nil, fmt.Errorf("quality report: %w", err)
	}
	for id, t := range totals {
		s := source(id)
		s.Runs, s.Documents, s.Published, s.Stored, s.Parked = t.Runs, t.Documents, t.Published, t.Stored, t.Parked
		s.OCR, s.Keyed = t.OCR, t.Keyed
	}
	counts, err := deadletter.CountByClass(ctx, db, since, until)
	if err != nil {
		return nil, fmt.Errorf("quality report: %w", err)
	}
	for _, c := range counts {
		s := source(c.Source)
		s.ByClass[c.Class] = c.All
		s.DeadLetters += c.All
		s.Open += c.Open
		s.WorstAttempts = max(s.WorstAttempts, c.WorstAttempts)
		if c.Class == classify.ClassOCRLowConfidence {
			s.WaitingForKeying += c.Open
		}
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
