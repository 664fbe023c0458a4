package vectorstore

import (
	"context"
	"crypto/sha256"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// TextHash is the SHA-256 of a chunk's text as sent to the embedder, its
// UTF-8 bytes and nothing else. Within one index generation, which fixes
// the model and the dimension, it is what determines the chunk's vector;
// unlike Record.ContentHash it leaves the metadata out, which the
// embedder never sees. Upsert stores it beside every vector (text_hash,
// migration 26).
type TextHash [sha256.Size]byte

// HashText returns the TextHash of text.
func HashText(text string) TextHash { return sha256.Sum256([]byte(text)) }

// Reuser is a Store that hands back the vectors it already holds for
// texts, so that a text is embedded once per generation however many
// chunks, documents or versions hold it. *Postgres is one.
type Reuser interface {
	// Reusable returns, for each of hashes that a stored vector of the
	// store's generation was embedded from with model at the store's
	// dimension, one such vector; hashes with none are absent from the
	// map. Every vector it returns has Dims values. A database error is
	// returned wrapped, never reclassified.
	Reusable(ctx context.Context, db DB, model string, hashes []TextHash) (map[TextHash][]float32, error)
	// Generation is the index generation whose vectors Reusable reads.
	Generation() int
}

var _ Reuser = (*Postgres)(nil)

// reuseStatement is the lookup of Reusable: one statement for a whole
// batch. The first generation also reads the rows retained while a new
// version of their document is indexed (chunk_embeddings_previous): an
// edit that shifts a document's chunks finds the text a chunk held before
// the new version overwrote it. A deleted document's rows are gone, so
// its text is never found.
func reuseStatement(t target) string {
	const cols = `text_hash, embedding`
	const cond = ` text_hash = ANY($1::bytea[]) AND model = $2 AND dims = $3`
	from := `SELECT ` + cols + ` FROM ` + t.table + ` c WHERE ` + t.where("c") + cond
	if t.generation == firstGeneration {
		from += ` UNION ALL SELECT ` + cols + ` FROM chunk_embeddings_previous WHERE` + cond
	}
	return `SELECT DISTINCT ON (v.text_hash) v.text_hash, v.embedding::real[] FROM (` + from + `) v ORDER BY v.text_hash`
}

// Reusable implements Reuser with one statement, whatever the number of
// hashes. Empty hashes is a no-op (nil, nil).
func (p *Postgres) Reusable(ctx context.Context, db DB, model string, hashes []TextHash) (map[TextHash][]float32, error) {
	if len(hashes) == 0 {
		return nil, nil
	}
	keys := make([][]byte, len(hashes))
	for i := range hashes {
		keys[i] = hashes[i][:]
	}
	rows, err := db.Query(ctx, p.reuseSQL, keys, model, p.dims)
	if err != nil {
		return nil, fmt.Errorf("vectorstore: look up %d texts: %w", len(hashes), err)
	}
	out := make(map[TextHash][]float32)
	var (
		key []byte
		vec []float32
	)
	_, err = pgx.ForEachRow(rows, []any{&key, &vec}, func() error {
		var h TextHash
		// A vector of another length cannot come from this generation;
		// it is never served, whatever the row claims.
		if len(key) != len(h) || len(vec) != p.dims {
			return nil
		}
		copy(h[:], key)
		out[h] = vec
		vec = nil
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("vectorstore: look up %d texts: %w", len(hashes), err)
	}
	return out, nil
}
