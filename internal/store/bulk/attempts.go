package bulk

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// Key names a chunk version of an index generation, as the ledger keys
// its members.
type Key struct {
	Generation int
	DocID      string
	ChunkIndex int
	Version    int64
}

// Attempts returns how many batches each key's chunk version went
// through without a result (members handed back as owed work), and
// which of them are pending in a batch now. Keys with neither are
// absent.
func Attempts(ctx context.Context, q Querier, keys []Key) (requeued map[Key]int, pending map[Key]bool, err error) {
	n := len(keys)
	gens, docs, chunks, versions := make([]int32, n), make([]string, n), make([]int32, n), make([]int64, n)
	for i, k := range keys {
		gens[i], docs[i], chunks[i], versions[i] = int32(k.Generation), k.DocID, int32(k.ChunkIndex), k.Version
	}
	rows, err := q.Query(ctx, `
		SELECT m.generation, m.doc_id, m.chunk_index, m.version,
		       count(*) FILTER (WHERE m.state = 'requeued'), bool_or(m.state = 'pending')
		FROM (SELECT DISTINCT * FROM unnest($1::int[], $2::text[], $3::int[], $4::bigint[]) AS u(g, d, c, v)) u
		JOIN bulk_members m ON m.doc_id = u.d AND m.generation = u.g AND m.chunk_index = u.c AND m.version = u.v
		GROUP BY 1, 2, 3, 4`, gens, docs, chunks, versions)
	if err != nil {
		return nil, nil, fmt.Errorf("bulk: read attempts: %w", err)
	}
	requeued, pending = map[Key]int{}, map[Key]bool{}
	var k Key
	var count int
	var held bool
	if _, err := pgx.ForEachRow(rows, []any{&k.Generation, &k.DocID, &k.ChunkIndex, &k.Version, &count, &held}, func() error {
		if count > 0 {
			requeued[k] = count
		}
		if held {
			pending[k] = true
		}
		return nil
	}); err != nil {
		return nil, nil, fmt.Errorf("bulk: read attempts: %w", err)
	}
	return requeued, pending, nil
}

// HoldsSQL is a predicate on the manifest row aliased m: true while
// its chunk version is pending in a bulk batch of generation 1. Such a
// chunk's job was acknowledged and is in no stream; the ledger holds it.
const HoldsSQL = `EXISTS (SELECT 1 FROM bulk_members b
	WHERE b.state = 'pending' AND b.generation = 1
	  AND b.doc_id = m.doc_id AND b.chunk_index = m.chunk_index AND b.version = m.version)`

// Stranded counts the members still pending in batches that were
// settled: the ledger handed every member of a settled batch on, so any
// such member is a chunk nothing will ever answer: the ledger's promise
// that every member ends applied, parked or requeued is broken.
func Stranded(ctx context.Context, q Querier) (int, error) {
	var n int
	err := q.QueryRow(ctx, `
		SELECT count(*) FROM bulk_members m JOIN bulk_batches b USING (batch_id)
		WHERE m.state = 'pending' AND b.state IN ('applied', 'requeued')`).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("bulk: count stranded members: %w", err)
	}
	return n, nil
}

// PendingLater counts the members pending in the batches of each later
// index generation (above 1): chunks its backfill carries in bulk mode,
// acknowledged and in no stream, as a message in flight would be.
func PendingLater(ctx context.Context, q Querier) (map[int]int, error) {
	rows, err := q.Query(ctx, `SELECT generation, count(*) FROM bulk_members WHERE state = 'pending' AND generation > 1 GROUP BY generation`)
	if err != nil {
		return nil, fmt.Errorf("bulk: count pending members: %w", err)
	}
	out := map[int]int{}
	var gen, n int
	if _, err := pgx.ForEachRow(rows, []any{&gen, &n}, func() error {
		out[gen] = n
		return nil
	}); err != nil {
		return nil, fmt.Errorf("bulk: count pending members: %w", err)
	}
	return out, nil
}
