package console

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sluicehq/sluice/internal/erase"
	"github.com/sluicehq/sluice/internal/manifest"
)

// document is what the console shows of one document: its current
// version and status, each delete of it from the audit, and what of its
// data the console's role can see left. Nothing of its text or metadata
// is read, so the page is the same for viewers and operators.
type document struct {
	DocID, Source, NativeID, Status, RunID string
	Version                                int64
	UpdatedAt                              time.Time
	DeletedAt                              *time.Time
	Deletes                                []erase.Deletion
	Left                                   erase.Left
}

// Deleted reports whether the document's current version is a tombstone.
func (d *document) Deleted() bool { return d.Status == string(manifest.DocDeleted) }

// LastDelete is the delete that made the current tombstone, or nil.
func (d *document) LastDelete() *erase.Deletion {
	if !d.Deleted() || len(d.Deletes) == 0 {
		return nil
	}
	return &d.Deletes[len(d.Deletes)-1]
}

// readDocument reads document docID (errNotFound if there is none). What
// is left is counted in the tables the console may read: vectors,
// escalated chunks, manifest job bytes and dead letters' own payloads.
// Retained previous-version vectors and payloads kept by reference are
// not readable by the console's role; sluice docs show counts them.
func readDocument(ctx context.Context, pool *pgxpool.Pool, docID string) (*document, error) {
	var d document
	err := pool.QueryRow(ctx, `
		SELECT doc_id, source_id, source_native_id, version, status, coalesce(run_id, ''), updated_at, deleted_at,
		       (SELECT count(*) FROM chunk_embeddings WHERE doc_id = $1),
		       (SELECT count(*) FROM escalated_chunks WHERE doc_id = $1)
		     + (SELECT count(*) FROM ingest_manifest WHERE doc_id = $1 AND job IS NOT NULL),
		       (SELECT count(*) FROM dead_letters WHERE doc_id = $1 AND length(payload) > 0)
		FROM documents WHERE doc_id = $1`, docID).Scan(
		&d.DocID, &d.Source, &d.NativeID, &d.Version, &d.Status, &d.RunID, &d.UpdatedAt, &d.DeletedAt,
		&d.Left.Vectors, &d.Left.TextRows, &d.Left.Payloads)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, errNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("read document: %w", err)
	}
	if d.Deletes, err = erase.Deletes(ctx, pool, docID); err != nil {
		return nil, err
	}
	return &d, nil
}

func (s *Server) documentPage(w http.ResponseWriter, r *http.Request) {
	d, err := readDocument(r.Context(), s.pool, r.PathValue("doc_id"))
	if errors.Is(err, errNotFound) {
		s.fail(w, r, http.StatusNotFound, "No document with that id.")
		return
	}
	if err != nil {
		s.internal(w, r, err)
		return
	}
	s.render(w, r, http.StatusOK, "document.html", page{Title: "Document " + d.NativeID, Nav: "list", Data: d})
}
