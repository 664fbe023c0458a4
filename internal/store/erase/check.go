package erase

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sluicehq/sluice/internal/store/deadletter"
	"github.com/sluicehq/sluice/internal/store/manifest"
)

// Leak is a deleted document of which PostgreSQL still holds something
// its erasure removes, by table.
type Leak struct {
	DocID string `json:"doc_id"`
	// Where names each table still holding the document's data, with
	// how many rows.
	Where map[string]int `json:"where"`
}

// String names the document and where its data is.
func (l Leak) String() string {
	var parts []string
	for _, t := range leakTables {
		if n := l.Where[t]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d in %s", n, t))
		}
	}
	var later []string
	for t := range l.Where {
		if strings.HasPrefix(t, GenerationLeakPrefix) {
			later = append(later, t)
		}
	}
	sort.Strings(later)
	for _, t := range later {
		parts = append(parts, fmt.Sprintf("%d in %s", l.Where[t], t))
	}
	return l.DocID + " (" + strings.Join(parts, ", ") + ")"
}

// GenerationLeakPrefix begins the Where key of a later index generation's
// vectors: "generation_embeddings.g2" for generation 2's. Generation 1's
// are "chunk_embeddings".
const GenerationLeakPrefix = "generation_embeddings.g"

// leakTables are the places a deleted document's data could be, in the
// order a leak names them.
var leakTables = []string{"chunk_embeddings", "chunk_embeddings_previous", "ingest_manifest.job", "ingest_manifest.live",
	"escalated_chunks", "dead_letters.payload", "dead_letters.open", "dead_letter_payloads", "file_bytes_refs", "outbox.payload", "bulk_members",
	"generation_chunks"}

// leaksSQL finds, for every deleted document, what is left of it: a
// vector or chunk text of any index generation, a manifest row with job bytes or not superseded
// at the tombstone's version, escalated text, a dead letter with its
// payload or still open, a payload kept by reference, a bulk member's
// text. A parked file's kept bytes are looked for apart (keptFileLeaks),
// through their owner.
const leaksSQL = `
WITH gone AS (SELECT doc_id, version FROM documents WHERE status = ` + manifest.SQLDocDeleted + `)
SELECT doc_id, what, n FROM (
	SELECT c.doc_id, 'chunk_embeddings' AS what, count(*) AS n FROM chunk_embeddings c JOIN gone USING (doc_id) GROUP BY 1
	UNION ALL
	SELECT p.doc_id, 'chunk_embeddings_previous', count(*) FROM chunk_embeddings_previous p JOIN gone USING (doc_id) GROUP BY 1
	UNION ALL
	SELECT v.doc_id, '` + GenerationLeakPrefix + `' || v.generation, count(*) FROM generation_embeddings v JOIN gone USING (doc_id)
	GROUP BY v.doc_id, v.generation
	UNION ALL
	SELECT m.doc_id, 'ingest_manifest.job', count(*) FROM ingest_manifest m JOIN gone USING (doc_id) WHERE m.job IS NOT NULL GROUP BY 1
	UNION ALL
	SELECT m.doc_id, 'ingest_manifest.live', count(*) FROM ingest_manifest m JOIN gone g USING (doc_id)
	WHERE m.status <> ` + manifest.SQLSuperseded + ` OR m.version < g.version GROUP BY 1
	UNION ALL
	SELECT e.doc_id, 'escalated_chunks', count(*) FROM escalated_chunks e JOIN gone USING (doc_id) GROUP BY 1
	UNION ALL
	SELECT d.doc_id, 'dead_letters.payload', count(*) FROM dead_letters d JOIN gone USING (doc_id)
	WHERE d.payload IS NOT NULL AND length(d.payload) > 0 GROUP BY 1
	UNION ALL
	SELECT d.doc_id, 'dead_letters.open', count(*) FROM dead_letters d JOIN gone USING (doc_id) WHERE d.resolved_at IS NULL GROUP BY 1
	UNION ALL
	SELECT r.doc_id, 'dead_letter_payloads', count(*) FROM dead_letter_payloads r JOIN gone USING (doc_id) GROUP BY 1
	UNION ALL
	SELECT o.payload->>'doc_id', 'outbox.payload', count(*) FROM outbox o JOIN gone g ON g.doc_id = o.payload->>'doc_id'
	WHERE coalesce(o.payload->>'payload', '') <> '' GROUP BY 1
	UNION ALL
	SELECT b.doc_id, 'bulk_members', count(*) FROM bulk_members b JOIN gone USING (doc_id) WHERE b.text <> '' GROUP BY 1
	UNION ALL
	SELECT c.doc_id, 'generation_chunks', count(*) FROM generation_chunks c JOIN gone USING (doc_id) GROUP BY 1
) leaks ORDER BY doc_id, what`

// Check returns every deleted document of which PostgreSQL still holds
// a vector, chunk text, job bytes, a payload, a kept file or an open
// dead letter: none, once every erasure has committed and nothing wrote
// any back.
func Check(ctx context.Context, q manifest.Querier) ([]Leak, error) {
	rows, err := q.Query(ctx, leaksSQL)
	if err != nil {
		return nil, fmt.Errorf("check erasures: %w", err)
	}
	found := map[string]map[string]int{}
	var id, what string
	var n int
	if _, err := pgx.ForEachRow(rows, []any{&id, &what, &n}, func() error {
		add(found, id, what, n)
		return nil
	}); err != nil {
		return nil, fmt.Errorf("check erasures: %w", err)
	}
	if err := keptFileLeaks(ctx, q, found); err != nil {
		return nil, err
	}
	leaks := make([]Leak, 0, len(found))
	for _, id := range slices.Sorted(maps.Keys(found)) {
		leaks = append(leaks, Leak{DocID: id, Where: found[id]})
	}
	return leaks, nil
}

// keptFileLeaks adds to found the deleted documents whose parked files'
// bytes (and recognised text) are still kept.
func keptFileLeaks(ctx context.Context, q manifest.Querier, found map[string]map[string]int) error {
	kept, err := deadletter.KeptFileRefs(ctx, q)
	if err != nil || len(kept) == 0 {
		return err
	}
	rows, err := q.Query(ctx, `SELECT doc_id FROM documents WHERE doc_id = ANY($1) AND status = `+manifest.SQLDocDeleted,
		slices.Collect(maps.Keys(kept)))
	if err != nil {
		return fmt.Errorf("check erasures: %w", err)
	}
	gone, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return fmt.Errorf("check erasures: %w", err)
	}
	for _, id := range gone {
		add(found, id, "file_bytes_refs", kept[id])
	}
	return nil
}

// add records that n rows of what still hold deleted document id's data.
func add(found map[string]map[string]int, id, what string, n int) {
	if found[id] == nil {
		found[id] = map[string]int{}
	}
	found[id][what] = n
}

// Redrive erases again what is left of the deleted documents ids, in one
// transaction, and records the repair as a request by by: an erasure a
// leak shows unfinished is finished. It returns how many documents it
// erased.
func Redrive(ctx context.Context, pool *pgxpool.Pool, by string, ids []string) (int, error) {
	if len(ids) == 0 {
		return 0, nil
	}
	var n int
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `
			SELECT doc_id, source_id, source_native_id, version FROM documents
			WHERE doc_id = ANY($1) AND status = `+manifest.SQLDocDeleted+` ORDER BY doc_id FOR UPDATE`, ids)
		if err != nil {
			return fmt.Errorf("lock deleted documents: %w", err)
		}
		ts, err := pgx.CollectRows(rows, pgx.RowToStructByPos[manifest.Tombstone])
		if err != nil || len(ts) == 0 {
			return err
		}
		gone := make([]string, len(ts))
		for i, t := range ts {
			gone[i] = t.DocID
		}
		if err := eraseAll(ctx, tx, ts, gone); err != nil {
			return err
		}
		n = len(ts)
		return insertRequest(ctx, tx, newRequestID(timeNow()), Request{By: by, Reason: "finish the erasure of deleted documents",
			SourceID: ts[0].SourceID, Execute: true}, len(ts))
	})
	return n, err
}
