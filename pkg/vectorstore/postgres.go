package vectorstore

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// The vector column types migration 2 can create, as recorded in
// sluice_settings.vector_type and returned by Postgres.Mode.
const (
	// ModeVector is pgvector's vector(N).
	ModeVector = "vector"
	// ModeRealArray is real[] with a CHECK on its length, used where the
	// server lacks pgvector.
	ModeRealArray = "real[]"
)

// Postgres is the Store on a database migrated by package migrations. It
// holds no connection, only the statements for its mode and dimension, so
// one value serves every goroutine and every transaction.
type Postgres struct {
	dims       int
	mode       string
	generation int
	upsertSQL  string
	resolveSQL string
	searchSQL  string
	pruneSQL   string
	reuseSQL   string
	claimSQL   string
}

var _ Store = (*Postgres)(nil)

// Open reads sluice_settings through db and returns the store for the
// vector type the database was migrated with. dims is the configured
// dimension (EMBEDDING_DIMS); when it is not the migrated one Open returns
// an error matching ErrDimsMismatch that says how to reconcile the two. A
// database without the settings yields ErrNotMigrated.
func Open(ctx context.Context, db DB, dims int) (*Postgres, error) {
	rows, err := db.Query(ctx, `SELECT key, value FROM sluice_settings WHERE key IN ('embedding_dims', 'vector_type')`)
	if err != nil {
		return nil, settingsError(err)
	}
	settings, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) ([2]string, error) {
		var kv [2]string
		err := row.Scan(&kv[0], &kv[1])
		return kv, err
	})
	if err != nil {
		return nil, settingsError(err)
	}
	var migratedDims, mode string
	for _, kv := range settings {
		switch kv[0] {
		case "embedding_dims":
			migratedDims = kv[1]
		case "vector_type":
			mode = kv[1]
		}
	}
	if migratedDims == "" || mode == "" {
		return nil, fmt.Errorf("%w: sluice_settings lacks embedding_dims or vector_type: run `sluice migrate` on this database", ErrNotMigrated)
	}
	want, err := strconv.Atoi(migratedDims)
	if err != nil {
		return nil, fmt.Errorf("vectorstore: sluice_settings.embedding_dims is %q, not a number: the database is damaged; migrate a new one", migratedDims)
	}
	if dims != want {
		return nil, fmt.Errorf("%w: EMBEDDING_DIMS=%d but the database was migrated for %d: migrate a new database or set EMBEDDING_DIMS=%d",
			ErrDimsMismatch, dims, want, want)
	}
	return newPostgres(dims, mode, firstGeneration)
}

// settingsError wraps a failure to read sluice_settings, recognising a
// database that was never migrated by its SQLSTATE.
func settingsError(err error) error {
	if pgErr, ok := errors.AsType[*pgconn.PgError](err); ok && pgErr.Code == "42P01" { // undefined_table
		return fmt.Errorf("%w: no sluice_settings table: run `sluice migrate` on this database: %w", ErrNotMigrated, err)
	}
	return fmt.Errorf("vectorstore: read sluice_settings: %w", err)
}

// newPostgres returns the store of generation gen: chunk_embeddings for
// the first, generation_embeddings bound to gen for a later one.
func newPostgres(dims int, mode string, gen int) (*Postgres, error) {
	if dims < 1 {
		return nil, errors.New("vectorstore: embedding dimension must be at least 1")
	}
	t := targetOf(gen)
	p := &Postgres{dims: dims, mode: mode, generation: gen, resolveSQL: resolveStatement(t), pruneSQL: pruneStatement(t),
		reuseSQL: reuseStatement(t), claimSQL: claimStatement(t)}
	switch {
	case mode == ModeVector && gen == firstGeneration:
		p.upsertSQL = upsertStatement(t, dims, "::vector")
		p.searchSQL = searchVectorSQL
	case mode == ModeRealArray && gen == firstGeneration:
		p.upsertSQL = upsertStatement(t, dims, "")
		p.searchSQL = searchRealArraySQL
	case mode == ModeVector:
		p.upsertSQL = upsertStatement(t, dims, "::vector")
		p.searchSQL = generationSearchVector(gen, dims)
	case mode == ModeRealArray:
		p.upsertSQL = upsertStatement(t, dims, "")
		p.searchSQL = generationSearchRealArray(gen)
	default:
		return nil, fmt.Errorf("vectorstore: sluice_settings.vector_type is %q; this build knows %q and %q: upgrade sluice or migrate a new database",
			mode, ModeVector, ModeRealArray)
	}
	return p, nil
}

// Dims is the configured embedding dimension.
func (p *Postgres) Dims() int { return p.dims }

// Mode is the type of the embedding column: ModeVector or ModeRealArray.
func (p *Postgres) Mode() string { return p.mode }

// PruneVersion deletes docID's chunks at index >= chunkCount and returns how
// many went. It does not look at versions: run it once the document's new
// version is complete, and the rows it removes are what is left of a longer
// older one.
func (p *Postgres) PruneVersion(ctx context.Context, db DB, docID string, chunkCount int) (int64, error) {
	if chunkCount < 0 {
		return 0, fmt.Errorf("vectorstore: prune %s: chunk count %d is negative", docID, chunkCount)
	}
	if chunkCount > math.MaxInt32 {
		return 0, nil // chunk_index is an integer column: no row can be that far out
	}
	tag, err := db.Exec(ctx, p.pruneSQL, docID, chunkCount)
	if err != nil {
		return 0, fmt.Errorf("vectorstore: prune %s: %w", docID, err)
	}
	return tag.RowsAffected(), nil
}

// DeleteDocuments deletes every row of the documents docIDs, served or
// retained (see Retain), in every generation: for documents left with
// nothing to search, such as a new version that is empty or unreadable.
func DeleteDocuments(ctx context.Context, db DB, docIDs []string) error {
	for _, table := range []string{"chunk_embeddings", "chunk_embeddings_previous", GenerationTable} {
		if _, err := db.Exec(ctx, `DELETE FROM `+table+` WHERE doc_id = ANY($1)`, docIDs); err != nil {
			return fmt.Errorf("vectorstore: delete documents: %w", err)
		}
	}
	return nil
}

// Erased is what EraseDocuments removed of one document.
type Erased struct {
	// Vectors are the rows of chunk_embeddings, Previous those of
	// chunk_embeddings_previous, Generations those of every later
	// generation (generation_embeddings): each held a vector and its
	// chunk's text.
	Vectors, Previous, Generations int
}

// EraseDocuments deletes every row of the documents docIDs, served or
// retained, in every generation, and reports what went by document: the
// store's part of deleting a document, committed in the caller's
// transaction with its tombstone, after which Upsert's version guard
// refuses every record of the deleted versions in any generation.
func EraseDocuments(ctx context.Context, db DB, docIDs []string) (map[string]Erased, error) {
	out := make(map[string]Erased, len(docIDs))
	for _, table := range []string{"chunk_embeddings", "chunk_embeddings_previous", GenerationTable} {
		rows, err := db.Query(ctx, `DELETE FROM `+table+` WHERE doc_id = ANY($1) RETURNING doc_id`, docIDs)
		if err != nil {
			return nil, fmt.Errorf("vectorstore: erase documents: %w", err)
		}
		var id string
		if _, err := pgx.ForEachRow(rows, []any{&id}, func() error {
			e := out[id]
			switch table {
			case "chunk_embeddings":
				e.Vectors++
			case GenerationTable:
				e.Generations++
			default:
				e.Previous++
			}
			out[id] = e
			return nil
		}); err != nil {
			return nil, fmt.Errorf("vectorstore: erase documents: %w", err)
		}
	}
	return out, nil
}
