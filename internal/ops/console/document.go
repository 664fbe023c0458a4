package console

import (
	"context"
	"errors"
	"net/http"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sluicehq/sluice/internal/store/erase"
	"github.com/sluicehq/sluice/internal/store/manifest"
)

// document is what the console shows of one document: erase.Show's
// account of it, its current version and status, each delete of it from
// the audit, and what of its data is left. Nothing of its text or
// metadata is read, so the page is the same for viewers and operators.
type document struct{ erase.Document }

// Deleted reports whether the document's current version is a tombstone.
func (d *document) Deleted() bool { return d.Status == string(manifest.DocDeleted) }

// LastDelete is the delete that made the current tombstone, or nil.
func (d *document) LastDelete() *erase.Deletion {
	if !d.Deleted() || len(d.Deletes) == 0 {
		return nil
	}
	return &d.Deletes[len(d.Deletes)-1]
}

// readDocument reads document docID (errNotFound if there is none), as
// sluice docs show does.
func readDocument(ctx context.Context, pool *pgxpool.Pool, docID string) (*document, error) {
	d, err := erase.Show(ctx, pool, docID)
	if errors.Is(err, erase.ErrNoDocument) {
		return nil, errNotFound
	}
	if err != nil {
		return nil, err
	}
	return &document{d}, nil
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
