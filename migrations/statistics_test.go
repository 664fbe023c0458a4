package migrations_test

import (
	"slices"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/sluicehq/sluice/internal/dev/testenv"
)

// ANALYZE of the embeddings tables gathers statistics on every column
// but the vector, which no query filters on and which cost most of the
// analyze (migration 00015).
func TestAnalyzeSkipsTheVectorColumn(t *testing.T) {
	t.Parallel()
	db := testenv.NewDatabase(t)
	ctx := t.Context()
	for _, table := range []string{"chunk_embeddings", "chunk_embeddings_previous"} {
		if _, err := db.Pool.Exec(ctx, `
			INSERT INTO `+table+` (doc_id, chunk_index, version, content_hash, model, dims, embedding, text)
			SELECT 'd' || i, 0, 1, 'h' || i, 'm', s.value::int, array_fill(i::real, ARRAY[s.value::int]), 'text ' || i
			FROM generate_series(1, 200) i, sluice_settings s WHERE s.key = 'embedding_dims'`); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Pool.Exec(ctx, "ANALYZE "+table); err != nil {
			t.Fatal(err)
		}
		rows, _ := db.Pool.Query(ctx, `SELECT attname::text FROM pg_stats WHERE schemaname = 'public' AND tablename = $1 ORDER BY attname`, table)
		columns, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		var target int
		if err := db.Pool.QueryRow(ctx, `SELECT attstattarget FROM pg_attribute WHERE attrelid = $1::regclass AND attname = 'embedding'`, table).Scan(&target); err != nil {
			t.Fatal(err)
		}
		if target != 0 {
			t.Errorf("%s.embedding statistics target %d, want 0", table, target)
		}
		if slices.Contains(columns, "embedding") {
			t.Errorf("ANALYZE %s gathered statistics on embedding; columns with statistics: %v", table, columns)
		}
		if len(columns) == 0 {
			t.Errorf("ANALYZE %s gathered no statistics at all, want every column but embedding", table)
		}
	}
}
