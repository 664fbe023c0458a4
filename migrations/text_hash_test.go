package migrations_test

import (
	"testing"

	"github.com/sluicehq/sluice/internal/dev/testenv"
	"github.com/sluicehq/sluice/migrations"
	"github.com/sluicehq/sluice/pkg/vectorstore"
)

// An existing database upgrades in place: every stored text, served,
// retained or of a later generation, gets the hash the store computes
// for it (vectorstore.HashText), so that its vector is reused at once.
func TestUpgradeHashesStoredTexts(t *testing.T) {
	t.Parallel()
	const dims = 4
	testenv.ForEachBackend(t, func(t *testing.T, backend testenv.Backend) {
		url := migratedTo(t, backend, dims, 25)
		old := connect(t, url)
		texts := []string{"plain text", "naïve café, 東京 ✓ 🙂", "line\nbreaks\tand \"quotes\""}
		if _, err := old.Exec(t.Context(), `INSERT INTO index_generations (generation, model, dims, chunk_size, chunk_overlap, chunk_unit, status)
			VALUES (2, 'm', 4, 512, 64, 'tokens', 'building')`); err != nil {
			t.Fatal(err)
		}
		for i, text := range texts {
			for _, sql := range []string{
				`INSERT INTO chunk_embeddings (doc_id, chunk_index, version, content_hash, model, dims, embedding, text)
				 VALUES ('d', $1, 1, 'h', 'm', 4, '{1,0,0,0}'::real[], $2)`,
				`INSERT INTO chunk_embeddings_previous SELECT * FROM chunk_embeddings WHERE chunk_index = $1 AND text = $2`,
				`INSERT INTO generation_embeddings (generation, doc_id, chunk_index, version, content_hash, model, dims, embedding, text)
				 VALUES (2, 'd', $1, 1, 'h', 'm', 4, '{1,0,0,0}'::real[], $2)`,
			} {
				if _, err := old.Exec(t.Context(), sql, i, text); err != nil {
					t.Fatal(err)
				}
			}
		}
		// Enough rows for the backfill to take more than one range of
		// pages, each committed on its own.
		var pages int
		if _, err := old.Exec(t.Context(), `INSERT INTO chunk_embeddings (doc_id, chunk_index, version, content_hash, model, dims, embedding, text)
			SELECT 'bulk', i, 1, 'h', 'm', 4, '{1,0,0,0}'::real[], 'bulk text ' || i FROM generate_series(0, 119999) i`); err != nil {
			t.Fatal(err)
		}
		if err := old.QueryRow(t.Context(), `SELECT (pg_relation_size('chunk_embeddings') / current_setting('block_size')::bigint)::int`).Scan(&pages); err != nil {
			t.Fatal(err)
		}
		if pages <= 1000 {
			t.Fatalf("chunk_embeddings holds %d pages, want more than the backfill's range of 1,000", pages)
		}
		if err := migrations.Up(t.Context(), url, migrations.Options{Dims: dims}); err != nil {
			t.Fatal(err)
		}
		var unhashed, bad int
		if err := old.QueryRow(t.Context(), `SELECT count(*) FILTER (WHERE text_hash IS NULL),
				count(*) FILTER (WHERE text_hash <> sha256(convert_to(text, 'UTF8')))
			FROM chunk_embeddings WHERE doc_id = 'bulk'`).Scan(&unhashed, &bad); err != nil {
			t.Fatal(err)
		}
		if unhashed != 0 || bad != 0 {
			t.Errorf("after the backfill of %d pages: %d rows without a hash, %d with a wrong one", pages, unhashed, bad)
		}
		var valid int
		if err := old.QueryRow(t.Context(), `SELECT count(*) FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
			WHERE c.relname LIKE '%text_hash' AND i.indisvalid`).Scan(&valid); err != nil {
			t.Fatal(err)
		}
		if valid != 3 {
			t.Errorf("%d valid text_hash indexes, want 3", valid)
		}
		for _, table := range []string{"chunk_embeddings", "chunk_embeddings_previous", "generation_embeddings"} {
			rows, err := old.Query(t.Context(), `SELECT text, text_hash FROM `+table+` WHERE doc_id = 'd' ORDER BY chunk_index`)
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for rows.Next() {
				var (
					text string
					hash []byte
				)
				if err := rows.Scan(&text, &hash); err != nil {
					t.Fatal(err)
				}
				if want := vectorstore.HashText(text); string(hash) != string(want[:]) {
					t.Errorf("%s: the text %q has hash %x, want %x", table, text, hash, want)
				}
				n++
			}
			if err := rows.Err(); err != nil {
				t.Fatal(err)
			}
			if n != len(texts) {
				t.Errorf("%s: %d rows, want %d", table, n, len(texts))
			}
		}
	})
}
