package generation

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/sluicehq/sluice/internal/manifest"
	"github.com/sluicehq/sluice/pkg/vectorstore"
)

// Progress is how complete a generation is, measured against the
// manifest as it stands: the chunks of the current version of every
// document that is not deleted.
type Progress struct {
	Generation int `json:"generation"`
	// Chunks are the chunks the generation should hold a vector of, or
	// that are parked.
	Chunks int64 `json:"chunks"`
	// Stored have a vector in the generation of the chunk's current
	// version and content.
	Stored int64 `json:"stored"`
	// Owed have none yet and are not parked.
	Owed int64 `json:"owed"`
	// Parked are parked in the manifest: no generation can embed them
	// until they are replayed or corrected.
	Parked int64 `json:"parked"`
	// Vectors are the generation's rows, stale versions included.
	Vectors int64 `json:"vectors"`
	// Percent is Stored of Chunks, 100 when there are none.
	Percent float64 `json:"percent"`
	// Backfill says what writes the generation's vectors.
	Backfill string `json:"backfill"`
}

// Complete reports whether nothing is owed or parked.
func (p Progress) Complete() bool { return p.Owed == 0 && p.Parked == 0 }

// Backfill states of Progress.
const (
	// BackfillPipeline is generation 1's: the pipeline writes it.
	BackfillPipeline = "written by the pipeline"
	// BackfillNotStarted is every later generation's for now: nothing
	// writes a new generation's vectors yet, so every chunk it lacks is
	// owed.
	BackfillNotStarted = "not started: nothing writes this generation's vectors yet"
	// BackfillDropped is a dropped generation's: its vectors are gone.
	BackfillDropped = "none: the generation was dropped and its vectors removed"
)

// progressSQL counts a generation's chunks; %s is the generation's
// stored keys (vectorstore.GenerationKeysSQL).
const progressSQL = `
SELECT count(*),
       count(*) FILTER (WHERE m.status <> ` + manifest.SQLParked + ` AND v.doc_id IS NOT NULL),
       count(*) FILTER (WHERE m.status <> ` + manifest.SQLParked + ` AND v.doc_id IS NULL),
       count(*) FILTER (WHERE m.status = ` + manifest.SQLParked + `)
FROM ingest_manifest m
JOIN documents d ON d.doc_id = m.doc_id AND d.version = m.version AND d.status <> ` + manifest.SQLDocDeleted + `
LEFT JOIN %s v ON v.doc_id = m.doc_id AND v.chunk_index = m.chunk_index
                AND v.version = m.version AND v.content_hash = m.content_hash
WHERE m.status <> ` + manifest.SQLSuperseded

// ProgressOf measures generation g against the manifest.
func ProgressOf(ctx context.Context, q manifest.Querier, g Generation) (Progress, error) {
	p := Progress{Generation: g.ID, Backfill: BackfillNotStarted}
	switch {
	case g.Status == Dropped:
		p.Backfill = BackfillDropped
	case g.ID == First:
		p.Backfill = BackfillPipeline
	}
	rows, err := q.Query(ctx, fmt.Sprintf(progressSQL, vectorstore.GenerationKeysSQL(g.ID)))
	if err != nil {
		return p, fmt.Errorf("measure generation %d: %w", g.ID, err)
	}
	_, err = pgx.CollectExactlyOneRow(rows, func(r pgx.CollectableRow) (struct{}, error) {
		return struct{}{}, r.Scan(&p.Chunks, &p.Stored, &p.Owed, &p.Parked)
	})
	if err != nil {
		return p, fmt.Errorf("measure generation %d: %w", g.ID, err)
	}
	p.Percent = 100
	if p.Chunks > 0 {
		p.Percent = float64(p.Stored) * 100 / float64(p.Chunks)
	}
	p.Vectors, err = countVectors(ctx, q, g.ID)
	return p, err
}

// countVectors counts generation id's vectors, stale versions included.
func countVectors(ctx context.Context, q manifest.Querier, id int) (int64, error) {
	rows, err := q.Query(ctx, `SELECT count(*) FROM `+vectorstore.GenerationKeysSQL(id)+` k`)
	if err != nil {
		return 0, fmt.Errorf("count generation %d's vectors: %w", id, err)
	}
	n, err := pgx.CollectExactlyOneRow(rows, pgx.RowTo[int64])
	if err != nil {
		return 0, fmt.Errorf("count generation %d's vectors: %w", id, err)
	}
	return n, nil
}
