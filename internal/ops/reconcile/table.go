package reconcile

import (
	"context"
	"slices"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sluicehq/sluice/internal/content/pgtable"
	"github.com/sluicehq/sluice/internal/store/manifest"
)

// tableExamples bounds the ids a TableReport names.
const tableExamples = 10

// TableReport compares a table source's rows with the index's documents
// of the source.
type TableReport struct {
	Source string `json:"source"`
	// Rows are the table's rows that match the source's filter;
	// Documents the source's documents not deleted.
	Rows      int `json:"rows"`
	Documents int `json:"documents"`
	// Missing are rows without a document; Extra documents without a
	// row. Changes still queued count until they are drained.
	Missing int `json:"missing"`
	Extra   int `json:"extra"`
	// MissingIDs and ExtraIDs name up to ten of each, in order.
	MissingIDs []string `json:"missing_ids,omitempty"`
	ExtraIDs   []string `json:"extra_ids,omitempty"`
	// Pending are the source's changes still queued in the table's
	// database.
	Pending int64 `json:"pending"`
}

// OK reports whether the index holds exactly the table's rows.
func (r TableReport) OK() bool { return r.Missing == 0 && r.Extra == 0 }

// CompareTable compares the rows of a table source (app is its
// application database) with the source's documents in pool.
func CompareTable(ctx context.Context, pool, app *pgxpool.Pool, cfg pgtable.Config) (TableReport, error) {
	rep := TableReport{Source: cfg.Source}
	rows, err := pgtable.Keys(ctx, app, cfg)
	if err != nil {
		return rep, err
	}
	docs, err := manifest.LiveNativeIDs(ctx, pool, cfg.Source)
	if err != nil {
		return rep, err
	}
	if rep.Pending, err = pgtable.Pending(ctx, app, cfg.Source); err != nil {
		return rep, err
	}
	rep.Rows, rep.Documents = len(rows), len(docs)
	slices.Sort(rows)
	slices.Sort(docs)
	for i, j := 0, 0; i < len(rows) || j < len(docs); {
		switch {
		case j == len(docs) || (i < len(rows) && rows[i] < docs[j]):
			rep.Missing++
			if len(rep.MissingIDs) < tableExamples {
				rep.MissingIDs = append(rep.MissingIDs, rows[i])
			}
			i++
		case i == len(rows) || docs[j] < rows[i]:
			rep.Extra++
			if len(rep.ExtraIDs) < tableExamples {
				rep.ExtraIDs = append(rep.ExtraIDs, docs[j])
			}
			j++
		default:
			i, j = i+1, j+1
		}
	}
	return rep, nil
}
