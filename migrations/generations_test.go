package migrations_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/sluicehq/sluice/internal/dev/testenv"
	"github.com/sluicehq/sluice/migrations"
)

// An existing database upgrades in place: what it stores becomes
// generation 1, active, with the model its vectors name and the
// dimension it was migrated for, and not one vector is rewritten.
func TestUpgradeMakesWhatIsStoredGenerationOne(t *testing.T) {
	t.Parallel()
	const dims = 4
	testenv.ForEachBackend(t, func(t *testing.T, backend testenv.Backend) {
		db := testenv.NewDatabase(t, testenv.OnBackend(backend))
		admin := connect(t, db.URL)
		b := make([]byte, 4)
		_, _ = rand.Read(b)
		name := "upgrade_" + hex.EncodeToString(b)
		if _, err := admin.Exec(t.Context(), `CREATE DATABASE `+name); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _, _ = admin.Exec(context.Background(), `DROP DATABASE `+name+` WITH (FORCE)`) })
		cfg := admin.Config()
		url := fmt.Sprintf("postgres://%s@%s:%d/%s?sslmode=disable", cfg.User, cfg.Host, cfg.Port, name)
		if cfg.Password != "" {
			url = fmt.Sprintf("postgres://%s:%s@%s:%d/%s?sslmode=disable", cfg.User, cfg.Password, cfg.Host, cfg.Port, name)
		}
		if err := migrations.UpTo(t.Context(), url, migrations.Options{Dims: dims}, 24); err != nil {
			t.Fatal(err)
		}
		old := connect(t, url)
		for i, model := range []string{"old-model", "old-model", "older-model"} {
			if _, err := old.Exec(t.Context(), `
				INSERT INTO chunk_embeddings (doc_id, chunk_index, version, content_hash, model, dims, embedding, text, updated_at)
				VALUES ('d', $1, 1, 'h', $2, 4, '{1,0,0,0}'::real[], 't', '2026-01-01')`, i, model); err != nil {
				t.Fatal(err)
			}
		}
		if err := migrations.Up(t.Context(), url, migrations.Options{Dims: dims}); err != nil {
			t.Fatal(err)
		}
		var (
			gen, gotDims  int
			model, status string
			chunkSize     *int
			moved         int
		)
		err := old.QueryRow(t.Context(), `SELECT generation, model, dims, status, chunk_size FROM index_generations`).
			Scan(&gen, &model, &gotDims, &status, &chunkSize)
		if err != nil {
			t.Fatalf("read the one generation: %v", err)
		}
		if gen != 1 || model != "old-model" || gotDims != dims || status != "active" || chunkSize != nil {
			t.Errorf("generation %d model %q dims %d status %s chunk size %v; want 1, old-model, %d, active, not recorded",
				gen, model, gotDims, status, chunkSize, dims)
		}
		if err := old.QueryRow(t.Context(), `SELECT count(*) FROM chunk_embeddings WHERE updated_at <> '2026-01-01'`).Scan(&moved); err != nil || moved != 0 {
			t.Errorf("%d vectors rewritten by the upgrade (%v), want none", moved, err)
		}
	})
}

// Exactly one generation is active whoever writes, the owner included:
// a second active one is refused at once, none at commit.
func TestExactlyOneGenerationIsActive(t *testing.T) {
	t.Parallel()
	db := testenv.NewDatabase(t)
	owner := connect(t, db.URL)
	ctx := t.Context()
	if _, err := owner.Exec(ctx, `INSERT INTO index_generations (generation, model, dims, chunk_size, chunk_overlap, chunk_unit, status)
		VALUES (2, 'm', 8, 512, 64, 'tokens', 'building')`); err != nil {
		t.Fatal(err)
	}
	if code := sqlstate(t, owner, `UPDATE index_generations SET status = 'active', activated_at = now() WHERE generation = 2`); code != "23505" {
		t.Errorf("a second active generation: SQLSTATE %q, want unique_violation (23505)", code)
	}
	if code := sqlstate(t, owner, `UPDATE index_generations SET status = 'retired' WHERE generation = 1`); code != "23514" {
		t.Errorf("no active generation: SQLSTATE %q, want check_violation (23514)", code)
	}
	// Retiring one and activating another in one transaction is how it
	// is done.
	err := pgx.BeginFunc(ctx, owner, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `UPDATE index_generations SET status = 'retired' WHERE generation = 1`); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `UPDATE index_generations SET status = 'active', activated_at = now() WHERE generation = 2`)
		return err
	})
	if err != nil {
		t.Errorf("switching the active generation in one transaction: %v", err)
	}
	// A later generation's vector has its generation's dimension.
	ok := `INSERT INTO generation_embeddings (generation, doc_id, chunk_index, version, content_hash, model, dims, embedding, text)
		VALUES (2, 'd', 0, 1, 'h', 'm', 8, '{1,0,0,0,0,0,0,0}', 't')`
	if code := sqlstate(t, owner, ok); code != "" {
		t.Errorf("a vector of its generation's dimension: SQLSTATE %q, want it stored", code)
	}
	for what, sql := range map[string]string{
		"shorter than its dims": `INSERT INTO generation_embeddings (generation, doc_id, chunk_index, version, content_hash, model, dims, embedding, text)
			VALUES (2, 'd', 1, 1, 'h', 'm', 8, '{1,0,0,0}', 't')`,
		"dims not its generation's": `INSERT INTO generation_embeddings (generation, doc_id, chunk_index, version, content_hash, model, dims, embedding, text)
			VALUES (2, 'd', 1, 1, 'h', 'm', 4, '{1,0,0,0}', 't')`,
	} {
		if code := sqlstate(t, owner, sql); code != "23514" && code != "23503" {
			t.Errorf("a vector %s: SQLSTATE %q, want it refused", what, code)
		}
	}
}
