package migrations

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
)

//go:embed *.sql
var sqlFiles embed.FS

// DefaultDims is the embedding dimension used when none is configured.
const DefaultDims = 384

// MaxDims is the largest dimension accepted; pgvector's vector type stores
// at most 16,000 dimensions.
const MaxDims = 16000

// Options configures a migration run.
type Options struct {
	// Dims is the embedding dimension N of chunk_embeddings.embedding.
	// Defaults to DefaultDims.
	Dims int
	// Log receives one line per applied migration. Defaults to io.Discard.
	Log io.Writer
}

func (o *Options) applyDefaults() {
	if o.Dims == 0 {
		o.Dims = DefaultDims
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
}

// Validate reports options that cannot produce a schema.
func (o Options) Validate() error {
	if o.Dims < 1 || o.Dims > MaxDims {
		return fmt.Errorf("embedding dimension %d out of range: set EMBEDDING_DIMS to the model's output size (1..%d)", o.Dims, MaxDims)
	}
	return nil
}

// Status is the state of one migration.
type Status struct {
	Version int64
	Source  string
	Applied bool
}

// Up applies every pending migration to the database at url.
func Up(ctx context.Context, url string, opts Options) error {
	opts.applyDefaults()
	if err := opts.Validate(); err != nil {
		return err
	}
	return withProvider(url, opts, func(p *goose.Provider) error {
		results, err := p.Up(ctx)
		for _, r := range results {
			fmt.Fprintln(opts.Log, r.String())
		}
		if err != nil {
			return fmt.Errorf("migrate up: %w", err)
		}
		return nil
	})
}

// UpTo applies the pending migrations up to and including version, and no
// later one: a database as an older release left it, for tests of an
// upgrade in place.
func UpTo(ctx context.Context, url string, opts Options, version int64) error {
	opts.applyDefaults()
	if err := opts.Validate(); err != nil {
		return err
	}
	return withProvider(url, opts, func(p *goose.Provider) error {
		if _, err := p.UpTo(ctx, version); err != nil {
			return fmt.Errorf("migrate up to %d: %w", version, err)
		}
		return nil
	})
}

// List returns the state of every known migration.
func List(ctx context.Context, url string) ([]Status, error) {
	opts := Options{}
	opts.applyDefaults()
	var out []Status
	err := withProvider(url, opts, func(p *goose.Provider) error {
		st, err := p.Status(ctx)
		if err != nil {
			return fmt.Errorf("migration status: %w", err)
		}
		for _, s := range st {
			out = append(out, Status{
				Version: s.Source.Version,
				Source:  sourceName(s.Source),
				Applied: s.State == goose.StateApplied,
			})
		}
		return nil
	})
	return out, err
}

func sourceName(s *goose.Source) string {
	if s.Path != "" {
		return s.Path
	}
	return fmt.Sprintf("%05d_chunk_embeddings.go", s.Version)
}

func withProvider(url string, opts Options, fn func(*goose.Provider) error) error {
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return fmt.Errorf("parse database url: %w", err)
	}
	db := stdlib.OpenDB(*cfg)
	defer db.Close()
	p, err := goose.NewProvider(goose.DialectPostgres, db, sqlFiles,
		goose.WithGoMigrations(chunkEmbeddings(opts.Dims)),
		goose.WithDisableGlobalRegistry(true),
	)
	if err != nil {
		return fmt.Errorf("load migrations: %w", err)
	}
	defer p.Close()
	return fn(p)
}

// chunkEmbeddings is migration 2. The vector column is chosen at migration
// time: pgvector where the server has it, else real[] with a length CHECK.
func chunkEmbeddings(dims int) *goose.Migration {
	up := func(ctx context.Context, tx *sql.Tx) error {
		var available bool
		err := tx.QueryRowContext(ctx,
			`SELECT EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'vector')`).Scan(&available)
		if err != nil {
			return err
		}
		column := fmt.Sprintf("real[] NOT NULL CHECK (array_ndims(embedding) = 1 AND array_length(embedding, 1) = %d)", dims)
		vectorType := "real[]"
		if available {
			if _, err := tx.ExecContext(ctx, `CREATE EXTENSION IF NOT EXISTS vector`); err != nil {
				return fmt.Errorf("create extension vector: %w", err)
			}
			column = fmt.Sprintf("vector(%d) NOT NULL", dims)
			vectorType = "vector"
		}
		stmts := []string{
			fmt.Sprintf(`CREATE TABLE chunk_embeddings (
				doc_id       text NOT NULL,
				chunk_index  integer NOT NULL CHECK (chunk_index >= 0),
				version      bigint NOT NULL CHECK (version >= 1),
				content_hash text NOT NULL,
				model        text NOT NULL,
				dims         integer NOT NULL CHECK (dims = %d),
				embedding    %s,
				text         text NOT NULL,
				metadata     jsonb NOT NULL DEFAULT '{}',
				updated_at   timestamptz NOT NULL DEFAULT now(),
				PRIMARY KEY (doc_id, chunk_index)
			)`, dims, column),
			`INSERT INTO sluice_settings (key, value) VALUES ('embedding_dims', $1), ('vector_type', $2)`,
		}
		if _, err := tx.ExecContext(ctx, stmts[0]); err != nil {
			return fmt.Errorf("create chunk_embeddings: %w", err)
		}
		if _, err := tx.ExecContext(ctx, stmts[1], fmt.Sprint(dims), vectorType); err != nil {
			return fmt.Errorf("record settings: %w", err)
		}
		return nil
	}
	down := func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `DROP TABLE chunk_embeddings; DELETE FROM sluice_settings WHERE key IN ('embedding_dims', 'vector_type')`)
		return err
	}
	return goose.NewGoMigration(2, &goose.GoFunc{RunTx: up}, &goose.GoFunc{RunTx: down})
}
