package generation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"github.com/sluicehq/sluice/internal/store/manifest"
)

// The backfill's statements: what a later generation is owed, queued in
// generation_backfill_queue until a consumer publishes it (package
// backfill), and what it could not embed, parked in generation_parked
// (migration 28).

// Owed is one chunk a later generation is owed: its key, its version and
// content as the manifest has them, and its source, which names the
// subject it is published on.
type Owed struct {
	// ID is the queue row's, 0 for a chunk not queued yet.
	ID          int64
	Generation  int
	DocID       string
	ChunkIndex  int
	Version     int64
	ContentHash string
	SourceID    string
}

// Stored is a chunk the pipeline stored, as Enqueue takes it.
type Stored struct {
	DocID       string
	ChunkIndex  int
	Version     int64
	ContentHash string
	SourceID    string
}

// Enqueue queues every chunk of stored for each generation after the
// first that is neither dropped nor recut (whose chunks are other pieces:
// RecordCuts queues those), in the caller's transaction: the pipeline's
// store transaction calls it, so that a new or changed document reaches
// every later generation with the same certainty as its first vector.
// With no such generation it writes nothing.
func Enqueue(ctx context.Context, q manifest.Querier, stored []Stored) error {
	if len(stored) == 0 {
		return nil
	}
	docs, indexes, versions, hashes, sources := make([]string, len(stored)), make([]int32, len(stored)),
		make([]int64, len(stored)), make([]string, len(stored)), make([]string, len(stored))
	for i, s := range stored {
		docs[i], indexes[i], versions[i], hashes[i], sources[i] = s.DocID, int32(s.ChunkIndex), s.Version, s.ContentHash, s.SourceID
	}
	_, err := q.Exec(ctx, `
		INSERT INTO generation_backfill_queue (generation, doc_id, chunk_index, version, content_hash, source_id)
		SELECT g.generation, u.doc_id, u.chunk_index, u.version, u.content_hash, u.source_id
		FROM index_generations g
		CROSS JOIN unnest($1::text[], $2::int4[], $3::int8[], $4::text[], $5::text[]) AS u(doc_id, chunk_index, version, content_hash, source_id)
		WHERE g.generation > `+fmt.Sprint(First)+` AND g.status <> '`+string(Dropped)+`' AND NOT g.recut`,
		docs, indexes, versions, hashes, sources)
	if err != nil {
		return fmt.Errorf("queue stored chunks for later generations: %w", err)
	}
	return nil
}

// Requeue queues owed again, each for its own generation unless that
// generation was dropped: chunks a bulk batch handed back, which the
// planner publishes to the backfill like any other.
func Requeue(ctx context.Context, q manifest.Querier, owed []Owed) error {
	if len(owed) == 0 {
		return nil
	}
	n := len(owed)
	gens, docs, indexes, versions, hashes, sources := make([]int32, n), make([]string, n), make([]int32, n), make([]int64, n), make([]string, n), make([]string, n)
	for i, o := range owed {
		gens[i], docs[i], indexes[i], versions[i], hashes[i], sources[i] = int32(o.Generation), o.DocID, int32(o.ChunkIndex), o.Version, o.ContentHash, o.SourceID
	}
	_, err := q.Exec(ctx, `
		INSERT INTO generation_backfill_queue (generation, doc_id, chunk_index, version, content_hash, source_id)
		SELECT u.generation, u.doc_id, u.chunk_index, u.version, u.content_hash, u.source_id
		FROM unnest($1::int4[], $2::text[], $3::int4[], $4::int8[], $5::text[], $6::text[])
		     AS u(generation, doc_id, chunk_index, version, content_hash, source_id)
		JOIN index_generations g ON g.generation = u.generation AND g.status <> '`+string(Dropped)+`'`,
		gens, docs, indexes, versions, hashes, sources)
	if err != nil {
		return fmt.Errorf("queue chunks owed again to later generations: %w", err)
	}
	return nil
}

// owedSQL is the chunks written before $5 that generation $1 should
// hold (shouldHold: the manifest's stored chunks, or a recut
// generation's own) and has no vector of at their current version and
// content and has not parked, after the cursor ($2, $3), in key order,
// at most $4.
var owedSQL = `
SELECT m.doc_id, m.chunk_index, m.version, m.content_hash, m.source_id
FROM ` + shouldHold("$1", false) + ` m
WHERE m.status = ` + manifest.SQLStored + ` AND (m.doc_id, m.chunk_index) > ($2, $3) AND m.since < $5
  AND NOT EXISTS (SELECT 1 FROM generation_embeddings v
                  WHERE v.generation = $1 AND v.doc_id = m.doc_id AND v.chunk_index = m.chunk_index
                    AND v.version = m.version AND v.content_hash = m.content_hash)
  AND NOT EXISTS (SELECT 1 FROM generation_parked p
                  WHERE p.generation = $1 AND p.doc_id = m.doc_id AND p.chunk_index = m.chunk_index
                    AND p.version = m.version AND p.content_hash = m.content_hash AND p.released_at IS NULL)
ORDER BY m.doc_id, m.chunk_index
LIMIT $4`

// infinity is PostgreSQL's timestamp after every other.
const infinity = "infinity"

// ErrBusy is a backfill step another consumer is taking at the moment.
var ErrBusy = errors.New("another consumer is planning this generation's backfill")

// Plan is one step of a generation's scan.
type Plan struct {
	// Queued is how many owed chunks the step queued.
	Queued int
	// Scanned is true once the pass reached the end of the manifest.
	Scanned bool
	// Pass is the scan's pass, from 1.
	Pass int
}

// PlanPage queues the next page chunks generation gen owes after its
// scan's cursor and moves the cursor past them, in one transaction: a
// page is queued once, whoever is killed when. A generation whose pass
// has reached the end queues nothing (see NewPass). It returns ErrBusy
// when another consumer holds the generation's scan.
func PlanPage(ctx context.Context, tx pgx.Tx, gen, page int) (Plan, error) {
	var p Plan
	if _, err := tx.Exec(ctx, `INSERT INTO generation_backfill (generation) VALUES ($1) ON CONFLICT DO NOTHING`, gen); err != nil {
		return p, fmt.Errorf("plan generation %d: %w", gen, err)
	}
	var doc *string
	var chunk *int32
	err := tx.QueryRow(ctx, `
		SELECT cursor_doc, cursor_chunk, pass, scanned FROM generation_backfill
		WHERE generation = $1 FOR UPDATE SKIP LOCKED`, gen).Scan(&doc, &chunk, &p.Pass, &p.Scanned)
	if errors.Is(err, pgx.ErrNoRows) {
		return p, ErrBusy
	}
	if err != nil {
		return p, fmt.Errorf("plan generation %d: %w", gen, err)
	}
	if p.Scanned {
		return p, nil
	}
	after, index := "", int32(-1)
	if doc != nil {
		after, index = *doc, *chunk
	}
	var last *string
	var lastIndex *int32
	err = tx.QueryRow(ctx, `
		WITH picked AS MATERIALIZED (`+owedSQL+`),
		queued AS (
			INSERT INTO generation_backfill_queue (generation, doc_id, chunk_index, version, content_hash, source_id)
			SELECT $1, doc_id, chunk_index, version, content_hash, source_id FROM picked)
		SELECT (SELECT count(*) FROM picked), l.doc_id, l.chunk_index
		FROM (SELECT 1) one
		LEFT JOIN LATERAL (SELECT doc_id, chunk_index FROM picked ORDER BY doc_id DESC, chunk_index DESC LIMIT 1) l ON true`,
		gen, after, index, page, infinity).Scan(&p.Queued, &last, &lastIndex)
	if err != nil {
		return p, fmt.Errorf("plan generation %d: %w", gen, err)
	}
	p.Scanned = p.Queued < page
	if last != nil {
		after, index = *last, *lastIndex
	}
	if _, err := tx.Exec(ctx, `
		UPDATE generation_backfill SET cursor_doc = $2, cursor_chunk = $3, scanned = $4, planned = planned + $5, updated_at = now()
		WHERE generation = $1`, gen, nilIfEmpty(after), nilIfNegative(index), p.Scanned, p.Queued); err != nil {
		return p, fmt.Errorf("plan generation %d: %w", gen, err)
	}
	return p, nil
}

func nilIfEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func nilIfNegative(i int32) *int32 {
	if i < 0 {
		return nil
	}
	return &i
}

// NewPass starts another scan of generation gen from the beginning: the
// last one ended, and the generation still owes chunks it did not queue
// (stored while the scan was past them, or published and lost).
func NewPass(ctx context.Context, q manifest.Querier, gen int) error {
	_, err := q.Exec(ctx, `
		UPDATE generation_backfill SET cursor_doc = NULL, cursor_chunk = NULL, scanned = false, pass = pass + 1, updated_at = now()
		WHERE generation = $1 AND scanned`, gen)
	if err != nil {
		return fmt.Errorf("start a new pass of generation %d: %w", gen, err)
	}
	return nil
}

// Take locks and returns up to limit queued chunks, oldest first, that
// no other transaction holds; Remove deletes them in the same
// transaction once they are published.
func Take(ctx context.Context, tx pgx.Tx, limit int) ([]Owed, error) {
	rows, err := tx.Query(ctx, `
		SELECT id, generation, doc_id, chunk_index, version, content_hash, source_id
		FROM generation_backfill_queue ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED`, limit)
	if err != nil {
		return nil, fmt.Errorf("take queued chunks: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Owed, error) {
		var o Owed
		err := r.Scan(&o.ID, &o.Generation, &o.DocID, &o.ChunkIndex, &o.Version, &o.ContentHash, &o.SourceID)
		return o, err
	})
	if err != nil {
		return nil, fmt.Errorf("take queued chunks: %w", err)
	}
	return out, nil
}

// Remove deletes the queue rows of owed.
func Remove(ctx context.Context, tx pgx.Tx, owed []Owed) error {
	ids := make([]int64, len(owed))
	for i, o := range owed {
		ids[i] = o.ID
	}
	if _, err := tx.Exec(ctx, `DELETE FROM generation_backfill_queue WHERE id = ANY($1)`, ids); err != nil {
		return fmt.Errorf("remove published chunks: %w", err)
	}
	return nil
}

// Backlog counts the queued chunks of each generation.
func Backlog(ctx context.Context, q manifest.Querier) (map[int]int64, error) {
	rows, err := q.Query(ctx, `SELECT generation, count(*) FROM generation_backfill_queue GROUP BY generation`)
	if err != nil {
		return nil, fmt.Errorf("count queued chunks: %w", err)
	}
	out := map[int]int64{}
	var g int
	var n int64
	if _, err := pgx.ForEachRow(rows, []any{&g, &n}, func() error { out[g] = n; return nil }); err != nil {
		return nil, fmt.Errorf("count queued chunks: %w", err)
	}
	return out, nil
}

// ParkedChunk is a chunk a later generation could not embed.
type ParkedChunk struct {
	Owed
	ErrorClass  string
	ErrorDetail string
	Attempts    int
}

// maxDetail is generation_parked.error_detail's bound.
const maxDetail = 2000

// Park records chunks as parked in their generations; a chunk parked
// again (a later version, another attempt) replaces its row, counting a
// replay when it had been released.
func Park(ctx context.Context, q manifest.Querier, chunks []ParkedChunk) error {
	if len(chunks) == 0 {
		return nil
	}
	gens, docs, indexes, versions, hashes, sources, classes, details, attempts := make([]int32, len(chunks)), make([]string, len(chunks)),
		make([]int32, len(chunks)), make([]int64, len(chunks)), make([]string, len(chunks)), make([]string, len(chunks)),
		make([]string, len(chunks)), make([]string, len(chunks)), make([]int32, len(chunks))
	for i, c := range chunks {
		gens[i], docs[i], indexes[i], versions[i], hashes[i], sources[i] = int32(c.Generation), c.DocID, int32(c.ChunkIndex), c.Version, c.ContentHash, c.SourceID
		classes[i], details[i], attempts[i] = c.ErrorClass, truncate(c.ErrorDetail, maxDetail), int32(max(1, c.Attempts))
	}
	_, err := q.Exec(ctx, `
		INSERT INTO generation_parked (generation, doc_id, chunk_index, version, content_hash, source_id, error_class, error_detail, attempts)
		SELECT * FROM unnest($1::int4[], $2::text[], $3::int4[], $4::int8[], $5::text[], $6::text[], $7::text[], $8::text[], $9::int4[])
		ON CONFLICT (generation, doc_id, chunk_index) DO UPDATE SET
			version = EXCLUDED.version, content_hash = EXCLUDED.content_hash, source_id = EXCLUDED.source_id,
			error_class = EXCLUDED.error_class, error_detail = EXCLUDED.error_detail, attempts = EXCLUDED.attempts, parked_at = now(),
			replays = generation_parked.replays + CASE WHEN generation_parked.released_at IS NULL THEN 0 ELSE 1 END,
			released_at = NULL`,
		gens, docs, indexes, versions, hashes, sources, classes, details, attempts)
	if err != nil {
		return fmt.Errorf("park chunks: %w", err)
	}
	return nil
}

// truncate cuts s to at most n bytes, at a rune boundary.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// Release hands the chunks parked with one of classes before before,
// and released fewer than maxReplays times, back to their generations'
// backfill: they are owed again, and the next pass queues them. It is the
// replayer's automatic retry of a transient failure, for later
// generations.
func Release(ctx context.Context, q manifest.Querier, classes []string, before time.Time, maxReplays int) (int64, error) {
	tag, err := q.Exec(ctx, `
		UPDATE generation_parked SET released_at = now()
		WHERE released_at IS NULL AND error_class = ANY($1) AND parked_at < $2 AND replays < $3`, classes, before, maxReplays)
	if err != nil {
		return 0, fmt.Errorf("release parked chunks: %w", err)
	}
	return tag.RowsAffected(), nil
}

// Unpark deletes generation gen's parked rows of chunks it has just
// stored, whatever version they were parked at, in the storing
// transaction.
func Unpark(ctx context.Context, q manifest.Querier, gen int, docIDs []string, indexes []int32) error {
	_, err := q.Exec(ctx, `
		DELETE FROM generation_parked p USING unnest($2::text[], $3::int4[]) AS u(doc_id, chunk_index)
		WHERE p.generation = $1 AND p.doc_id = u.doc_id AND p.chunk_index = u.chunk_index`, gen, docIDs, indexes)
	if err != nil {
		return fmt.Errorf("clear stored chunks from generation %d's parked: %w", gen, err)
	}
	return nil
}

// MarkReady moves generation gen from building to ready through the
// owner's mark_generation_ready, which audits it with p; false when it
// was not building.
func MarkReady(ctx context.Context, q manifest.Querier, gen int, p Progress) (bool, error) {
	raw, err := json.Marshal(p)
	if err != nil {
		return false, fmt.Errorf("mark generation %d ready: %w", gen, err)
	}
	rows, err := q.Query(ctx, `SELECT mark_generation_ready($1, $2)`, gen, raw)
	if err != nil {
		return false, fmt.Errorf("mark generation %d ready: %w", gen, err)
	}
	ok, err := pgx.CollectExactlyOneRow(rows, pgx.RowTo[bool])
	if err != nil {
		return false, fmt.Errorf("mark generation %d ready: %w", gen, err)
	}
	return ok, nil
}

// BackfillState is a later generation's backfill as generation_backfill
// and the queue have it.
type BackfillState struct {
	// Pass is the scan's pass, from 1; 0 before its first page.
	Pass int `json:"pass"`
	// Scanned is true once the pass reached the end.
	Scanned bool `json:"scanned"`
	// Planned counts the chunks every pass has queued.
	Planned int64 `json:"planned"`
	// Queued are waiting to be published.
	Queued int64 `json:"queued"`
}

// StateOf reads generation gen's backfill.
func StateOf(ctx context.Context, q manifest.Querier, gen int) (BackfillState, error) {
	var s BackfillState
	rows, err := q.Query(ctx, `
		SELECT coalesce(b.pass, 0), coalesce(b.scanned, false), coalesce(b.planned, 0),
		       (SELECT count(*) FROM generation_backfill_queue WHERE generation = $1)
		FROM (SELECT $1::int AS generation) g LEFT JOIN generation_backfill b USING (generation)`, gen)
	if err != nil {
		return s, fmt.Errorf("read generation %d's backfill: %w", gen, err)
	}
	_, err = pgx.CollectExactlyOneRow(rows, func(r pgx.CollectableRow) (struct{}, error) {
		return struct{}{}, r.Scan(&s.Pass, &s.Scanned, &s.Planned, &s.Queued)
	})
	if err != nil {
		return s, fmt.Errorf("read generation %d's backfill: %w", gen, err)
	}
	return s, nil
}

// Erase deletes what the generations hold of documents docIDs besides
// their vectors, in every generation: queued, parked, and a recut
// generation's cuts with their text. It is the generations' part of
// deleting a document (package erase); a deleted document's queued chunk
// would find nothing to embed anyway.
func Erase(ctx context.Context, q manifest.Querier, docIDs []string) error {
	for _, table := range []string{"generation_backfill_queue", "generation_parked", "generation_chunks", "generation_documents"} {
		if _, err := q.Exec(ctx, `DELETE FROM `+table+` WHERE doc_id = ANY($1)`, docIDs); err != nil {
			return fmt.Errorf("erase documents from %s: %w", table, err)
		}
	}
	return nil
}

// LockForWrite share-locks generation gen's registry row until the
// caller's transaction ends (lock_generation_for_write) and reports
// whether its vectors may still be written: false once it is dropped or
// unknown. A drop waits for the transaction, or the transaction sees the
// drop.
func LockForWrite(ctx context.Context, q manifest.Querier, gen int) (bool, error) {
	rows, err := q.Query(ctx, `SELECT lock_generation_for_write($1)`, gen)
	if err != nil {
		return false, fmt.Errorf("lock generation %d: %w", gen, err)
	}
	status, err := pgx.CollectExactlyOneRow(rows, pgx.RowTo[*string])
	if err != nil {
		return false, fmt.Errorf("lock generation %d: %w", gen, err)
	}
	return status != nil && Status(*status) != Dropped, nil
}

// OwesStored reports whether generation gen lacks a vector of any chunk
// the manifest stored (or, recut, it cut) before before, at its current version and
// content, that it has not parked: what another pass of its scan would
// queue. A zero before counts every stored chunk.
func OwesStored(ctx context.Context, q manifest.Querier, gen int, before time.Time) (bool, error) {
	var until any = infinity
	if !before.IsZero() {
		until = before
	}
	rows, err := q.Query(ctx, `SELECT EXISTS (`+owedSQL+`)`, gen, "", -1, 1, until)
	if err != nil {
		return false, fmt.Errorf("look for chunks generation %d owes: %w", gen, err)
	}
	ok, err := pgx.CollectExactlyOneRow(rows, pgx.RowTo[bool])
	if err != nil {
		return false, fmt.Errorf("look for chunks generation %d owes: %w", gen, err)
	}
	return ok, nil
}
