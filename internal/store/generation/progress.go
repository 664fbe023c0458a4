package generation

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sluicehq/sluice/internal/store/manifest"
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
	// Parked are parked in the manifest, where no generation can embed
	// them until they are replayed or corrected, or in this generation
	// alone (generation_parked) until sluice index retry.
	Parked int64 `json:"parked"`
	// ParkedHere are those of Parked parked in this generation alone:
	// every other generation holds them, and sluice index retry embeds
	// them again (Retryable). A chunk parked in the manifest is missing
	// from every generation alike.
	ParkedHere int64 `json:"parked_here"`
	// Uncut are the documents a recut generation has not cut at their
	// current version: the sources they come from have not been run
	// since it was created or they changed. Their chunks are in none of
	// the counts above; 0 for any other generation.
	Uncut int64 `json:"uncut"`
	// Vectors are the generation's rows, stale versions included.
	Vectors int64 `json:"vectors"`
	// Percent is Stored of Chunks, 100 when there are none.
	Percent float64 `json:"percent"`
	// Backfill says what writes the generation's vectors.
	Backfill string `json:"backfill"`
	// State is a later generation's backfill; nil for generation 1.
	State *BackfillState `json:"state,omitempty"`
	// RecentPerSecond is the rate the generation's vectors were written
	// at over the last ETAWindow, and ETASeconds what the owed chunks
	// take at that rate (absent while none are written).
	RecentPerSecond float64  `json:"recent_per_second"`
	ETASeconds      *float64 `json:"eta_seconds,omitempty"`
}

// Complete reports whether the generation holds every chunk the others
// hold: nothing owed, nothing parked in it alone, no document left to
// cut. A chunk parked in the manifest (or withheld from a cut) is
// missing from every generation, so it does not hold back one
// generation against another.
func (p Progress) Complete() bool { return p.Owed == 0 && p.ParkedHere == 0 && p.Uncut == 0 }

// Backfill states of Progress.
const (
	// BackfillPipeline is generation 1's: the pipeline writes it.
	BackfillPipeline = "written by the pipeline"
	// BackfillRunning is a later generation's: the consumers' backfill
	// writes it, from the chunk text generation 1 holds, and queues
	// every chunk the pipeline stores for it.
	BackfillRunning = "written by the backfill"
	// BackfillRecut is a recut generation's: the consumers' backfill
	// writes it from the chunks the sources' runs cut for it.
	BackfillRecut = "written by the backfill, from the sources' runs"
	// BackfillDropped is a dropped generation's: its vectors are gone.
	BackfillDropped = "none: the generation was dropped and its vectors removed"
)

// ETAWindow is the span Progress measures a generation's write rate
// over.
const ETAWindow = 5 * time.Minute

// parkedHereSQL is the condition of a chunk parked in the generation
// alone (Progress.ParkedHere): what sluice index retry embeds again.
const parkedHereSQL = `m.status <> ` + manifest.SQLParked + ` AND v.doc_id IS NULL AND gp.doc_id IS NOT NULL`

// progressSQL counts a generation's chunks; chunksSQL follows it.
const progressSQL = `
SELECT count(*),
       count(*) FILTER (WHERE m.status <> ` + manifest.SQLParked + ` AND v.doc_id IS NOT NULL),
       count(*) FILTER (WHERE m.status <> ` + manifest.SQLParked + ` AND v.doc_id IS NULL AND gp.doc_id IS NULL),
       count(*) FILTER (WHERE m.status = ` + manifest.SQLParked + ` OR (v.doc_id IS NULL AND gp.doc_id IS NOT NULL)),
       count(*) FILTER (WHERE ` + parkedHereSQL + `)`

// Retryable counts the chunks generation id parked alone, those that
// sluice index retry (Registry.Retry) embeds again: Progress.ParkedHere.
// Chunks parked in the manifest are not among them; sluice dlq replay
// retries those.
func Retryable(ctx context.Context, q manifest.Querier, id int) (int64, error) {
	rows, err := q.Query(ctx, `SELECT count(*) `+chunksSQL(id, false)+` AND `+parkedHereSQL)
	if err != nil {
		return 0, fmt.Errorf("count generation %d's parked chunks: %w", id, err)
	}
	n, err := pgx.CollectExactlyOneRow(rows, pgx.RowTo[int64])
	if err != nil {
		return 0, fmt.Errorf("count generation %d's parked chunks: %w", id, err)
	}
	return n, nil
}

// chunksSQL is the chunks generation id should hold (shouldHold, with
// their cut text when withText), m, beside its vector of the chunk's
// current version and content, v, and its parked row of them, gp (each
// NULL when there is none), ending in a WHERE clause a caller may extend
// with AND.
func chunksSQL(id int, withText bool) string {
	return `
FROM ` + shouldHold(strconv.Itoa(id), withText) + ` m
LEFT JOIN ` + vectorstore.GenerationKeysSQL(id) + ` v ON v.doc_id = m.doc_id AND v.chunk_index = m.chunk_index
                AND v.version = m.version AND v.content_hash = m.content_hash
LEFT JOIN generation_parked gp ON gp.generation = ` + strconv.Itoa(id) + ` AND gp.doc_id = m.doc_id AND gp.chunk_index = m.chunk_index
                AND gp.version = m.version AND gp.content_hash = m.content_hash AND gp.released_at IS NULL
WHERE m.status <> ` + manifest.SQLSuperseded
}

// ProgressOf measures generation g against the manifest.
func ProgressOf(ctx context.Context, q manifest.Querier, g Generation) (Progress, error) {
	p := Progress{Generation: g.ID, Backfill: BackfillRunning}
	switch {
	case g.Status == Dropped:
		p.Backfill = BackfillDropped
	case g.ID == First:
		p.Backfill = BackfillPipeline
	case g.Recut:
		p.Backfill = BackfillRecut
	}
	rows, err := q.Query(ctx, progressSQL+chunksSQL(g.ID, false))
	if err != nil {
		return p, fmt.Errorf("measure generation %d: %w", g.ID, err)
	}
	_, err = pgx.CollectExactlyOneRow(rows, func(r pgx.CollectableRow) (struct{}, error) {
		return struct{}{}, r.Scan(&p.Chunks, &p.Stored, &p.Owed, &p.Parked, &p.ParkedHere)
	})
	if err != nil {
		return p, fmt.Errorf("measure generation %d: %w", g.ID, err)
	}
	if p.Uncut, err = countUncut(ctx, q, g); err != nil {
		return p, err
	}
	p.Percent = 100
	if p.Chunks > 0 {
		p.Percent = float64(p.Stored) * 100 / float64(p.Chunks)
	}
	if p.Vectors, err = countVectors(ctx, q, g.ID); err != nil {
		return p, err
	}
	if g.ID == First || g.Status == Dropped {
		return p, nil
	}
	st, err := StateOf(ctx, q, g.ID)
	if err != nil {
		return p, err
	}
	p.State = &st
	rows, err = q.Query(ctx, `SELECT count(*) FROM generation_embeddings WHERE generation = $1 AND updated_at > now() - make_interval(secs => $2)`,
		g.ID, ETAWindow.Seconds())
	if err != nil {
		return p, fmt.Errorf("measure generation %d's rate: %w", g.ID, err)
	}
	recent, err := pgx.CollectExactlyOneRow(rows, pgx.RowTo[int64])
	if err != nil {
		return p, fmt.Errorf("measure generation %d's rate: %w", g.ID, err)
	}
	p.RecentPerSecond = float64(recent) / ETAWindow.Seconds()
	if p.RecentPerSecond > 0 {
		eta := float64(p.Owed) / p.RecentPerSecond
		p.ETASeconds = &eta
	}
	return p, nil
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
