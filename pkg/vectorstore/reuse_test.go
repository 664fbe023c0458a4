package vectorstore_test

import (
	"slices"
	"testing"

	"github.com/sluicehq/sluice/internal/dev/testenv"
	"github.com/sluicehq/sluice/migrations"
	"github.com/sluicehq/sluice/pkg/vectorstore"
)

// Reusable finds a stored vector by its text alone, in one statement for
// many texts, and only where it is the vector that text would get: of the
// store's generation, made by the same model, of the text the row holds
// now (not one it held before an update) and of no erased document.
func TestReusableFindsOnlyTheVectorTheTextWouldGet(t *testing.T) {
	t.Parallel()
	testenv.ForEachBackend(t, func(t *testing.T, backend testenv.Backend) {
		first, second, db := openGenerations(t, backend)
		ctx := t.Context()
		if _, err := db.Pool.Exec(ctx, `
			INSERT INTO index_generations (generation, model, dims, chunk_size, chunk_overlap, chunk_unit, status)
			VALUES (3, 'm', $1, 512, 64, 'tokens', 'building')`, genDims); err != nil {
			t.Fatal(err)
		}
		third, err := vectorstore.OpenGeneration(ctx, db.Pool, 3, genDims)
		if err != nil {
			t.Fatal(err)
		}
		wideA, wideB := []float32{1, 0, 0, 0, 0, 0, 0, 0}, []float32{0, 1, 0, 0, 0, 0, 0, 0}
		narrow := []float32{0, 0, 1, 0}
		const textA, textB = "a: naïve café", "b: 東京 ✓"
		withText := func(r vectorstore.Record, text string) vectorstore.Record { r.Text = text; return r }
		if _, err := first.Upsert(ctx, db.Pool, []vectorstore.Record{withText(rec("a", 0, 2, "h0", wideA), textA), withText(rec("b", 0, 1, "h0", wideB), textB)}); err != nil {
			t.Fatal(err)
		}
		if _, err := second.Upsert(ctx, db.Pool, []vectorstore.Record{withText(rec("a", 0, 2, "h0", narrow), textA)}); err != nil {
			t.Fatal(err)
		}
		a, b, none := vectorstore.HashText(textA), vectorstore.HashText(textB), vectorstore.HashText("never stored")
		all := []vectorstore.TextHash{a, b, none}
		// Generation 1's lookup runs as the services that reuse vectors
		// do; a later generation's is read by the owner until its
		// backfill exists.
		owner := map[string]vectorstore.DB{"the owner": db.Pool}
		services := map[string]vectorstore.DB{"the owner": db.Pool,
			migrations.ConsumerRole: db.RolePool(t, migrations.ConsumerRole), migrations.ReplayerRole: db.RolePool(t, migrations.ReplayerRole)}
		check := func(what string, s *vectorstore.Postgres, model string, hashes []vectorstore.TextHash, want map[vectorstore.TextHash][]float32) {
			t.Helper()
			as := owner
			if s.Generation() == 1 {
				as = services
			}
			for role, conn := range as {
				got, err := s.Reusable(ctx, conn, model, hashes)
				if err != nil {
					t.Fatalf("%s, as %s: %v", what, role, err)
				}
				if len(got) != len(want) {
					t.Errorf("%s, as %s: %d vectors found, want %d", what, role, len(got), len(want))
				}
				for h, v := range want {
					if !slices.Equal(got[h], v) {
						t.Errorf("%s, as %s: vector %v, want %v", what, role, got[h], v)
					}
				}
			}
		}
		check("generation 1, its model", first, "m", all, map[vectorstore.TextHash][]float32{a: wideA, b: wideB})
		check("generation 1, another model", first, "other", all, nil)
		check("generation 2, its own vector of the text", second, "m", all, map[vectorstore.TextHash][]float32{a: narrow})
		check("generation 3, same model and dimension as generation 2", third, "m", all, nil)

		// Rewritten with another text, a row no longer answers for the
		// text it held.
		moved := withText(rec("a", 0, 3, "h1", wideB), textB)
		if _, err := db.Pool.Exec(ctx, `UPDATE documents SET version = 3 WHERE doc_id = 'a'`); err != nil {
			t.Fatal(err)
		}
		if _, err := first.Upsert(ctx, db.Pool, []vectorstore.Record{moved}); err != nil {
			t.Fatal(err)
		}
		check("generation 1, after the update", first, "m", all, map[vectorstore.TextHash][]float32{b: wideB})

		if _, err := vectorstore.EraseDocuments(ctx, db.Pool, []string{"a", "b"}); err != nil {
			t.Fatal(err)
		}
		check("generation 1, after the erasure", first, "m", all, nil)
		check("generation 2, after the erasure", second, "m", all, nil)
	})
}
