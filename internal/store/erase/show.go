package erase

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sluicehq/sluice/internal/store/manifest"
)

// Document is what PostgreSQL says of one document, for sluice docs
// show: its current version and status, each delete of it, and what of
// its data is left now.
type Document struct {
	DocID    string `json:"doc_id"`
	SourceID string `json:"source_id"`
	NativeID string `json:"source_native_id"`
	Version  int64  `json:"version"`
	Status   string `json:"status"`
	// LiveVersion is the version search serves while Version is not
	// ready: the one before a version being embedded, or before one that
	// failed, which stays served until a version succeeds. Absent when
	// none is (a first version, or one emptied or deleted).
	LiveVersion *int64     `json:"live_version,omitempty"`
	RunID       string     `json:"run_id,omitempty"`
	UpdatedAt   time.Time  `json:"updated_at"`
	DeletedAt   *time.Time `json:"deleted_at,omitempty"`
	// Deletes are the document's deletes, oldest first.
	Deletes []Deletion `json:"deletes"`
	// Left is what is left of the document's data now.
	Left Left `json:"left"`
}

// Deletion is one delete of a document: its tombstone's version, when,
// who asked and why, or which sync run, and what its erasure removed.
type Deletion struct {
	RequestID   string    `json:"request_id"`
	Version     int64     `json:"version"`
	DeletedAt   time.Time `json:"deleted_at"`
	By          string    `json:"requested_by"`
	Reason      string    `json:"reason"`
	RunID       string    `json:"run_id,omitempty"`
	Vectors     int       `json:"vectors_erased"`
	TextRows    int       `json:"text_rows_erased"`
	Jobs        int       `json:"jobs_erased"`
	Payloads    int       `json:"payloads_erased"`
	DeadLetters int       `json:"dead_letters_resolved"`
}

// Serving says which earlier version search serves, when it serves one
// in place of Version; empty when it serves Version or nothing.
func (d Document) Serving() string {
	if d.LiveVersion == nil || *d.LiveVersion >= d.Version || d.Status == string(manifest.DocReady) {
		return ""
	}
	if d.Status == string(manifest.DocFailed) {
		return fmt.Sprintf("search serves version %d: version %d failed and waits in its dead letter, and the served version stays until a version succeeds",
			*d.LiveVersion, d.Version)
	}
	return fmt.Sprintf("search serves version %d until version %d is stored", *d.LiveVersion, d.Version)
}

// Left counts a document's data as it stands: vectors (of every index
// generation), other rows with its text (retained vectors, escalated
// text, manifest job bytes) and dead-letter payloads.
type Left struct {
	Vectors  int `json:"vectors"`
	TextRows int `json:"text_rows"`
	Payloads int `json:"payloads"`
}

// ErrNoDocument is a doc id no document has.
var ErrNoDocument = errors.New("no such document")

// Show returns what PostgreSQL says of document docID.
func Show(ctx context.Context, q manifest.Querier, docID string) (Document, error) {
	rows, err := q.Query(ctx, `
		SELECT doc_id, source_id, source_native_id, version, status, live_version, coalesce(run_id, ''), updated_at, deleted_at,
		       (SELECT count(*) FROM chunk_embeddings WHERE doc_id = $1)
		     + (SELECT count(*) FROM generation_embeddings WHERE doc_id = $1),
		       (SELECT count(*) FROM chunk_embeddings_previous WHERE doc_id = $1)
		     + (SELECT count(*) FROM escalated_chunks WHERE doc_id = $1)
		     + (SELECT count(*) FROM ingest_manifest WHERE doc_id = $1 AND job IS NOT NULL),
		       (SELECT count(*) FROM dead_letters WHERE doc_id = $1 AND payload IS NOT NULL AND length(payload) > 0)
		     + (SELECT count(*) FROM dead_letter_payloads WHERE doc_id = $1)
		FROM documents WHERE doc_id = $1`, docID)
	if err != nil {
		return Document{}, fmt.Errorf("show document: %w", err)
	}
	d, err := pgx.CollectExactlyOneRow(rows, func(r pgx.CollectableRow) (Document, error) {
		var d Document
		err := r.Scan(&d.DocID, &d.SourceID, &d.NativeID, &d.Version, &d.Status, &d.LiveVersion, &d.RunID, &d.UpdatedAt, &d.DeletedAt,
			&d.Left.Vectors, &d.Left.TextRows, &d.Left.Payloads)
		return d, err
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return Document{}, fmt.Errorf("%w %q", ErrNoDocument, docID)
	}
	if err != nil {
		return Document{}, fmt.Errorf("show document: %w", err)
	}
	if d.Deletes, err = Deletes(ctx, q, docID); err != nil {
		return Document{}, err
	}
	return d, nil
}

// Deletes returns the deletes of document docID, oldest first: what the
// audit says, which the console's role may read too.
func Deletes(ctx context.Context, q manifest.Querier, docID string) ([]Deletion, error) {
	rows, err := q.Query(ctx, `
		SELECT x.request_id, x.version, x.deleted_at, r.requested_by, r.reason, coalesce(r.run_id, ''),
		       x.vectors, x.text_rows, x.jobs, x.payloads, x.dead_letters
		FROM document_deletions x JOIN deletion_requests r USING (request_id)
		WHERE x.doc_id = $1 ORDER BY x.version`, docID)
	if err != nil {
		return nil, fmt.Errorf("show deletes: %w", err)
	}
	ds, err := pgx.CollectRows(rows, pgx.RowToStructByPos[Deletion])
	if err != nil {
		return nil, fmt.Errorf("show deletes: %w", err)
	}
	return ds, nil
}

// Listed is one document in a listing.
type Listed struct {
	DocID     string     `json:"doc_id"`
	NativeID  string     `json:"source_native_id"`
	Version   int64      `json:"version"`
	Status    string     `json:"status"`
	UpdatedAt time.Time  `json:"updated_at"`
	DeletedAt *time.Time `json:"deleted_at,omitempty"`
}

// List returns up to limit documents of source in doc id order: the
// deleted ones with deleted, the others without.
func List(ctx context.Context, q manifest.Querier, source string, deleted bool, limit int) ([]Listed, error) {
	rows, err := q.Query(ctx, `
		SELECT doc_id, source_native_id, version, status, updated_at, deleted_at FROM documents
		WHERE source_id = $1 AND (status = `+manifest.SQLDocDeleted+`) = $2
		ORDER BY doc_id LIMIT $3`, source, deleted, limit)
	if err != nil {
		return nil, fmt.Errorf("list documents: %w", err)
	}
	ls, err := pgx.CollectRows(rows, pgx.RowToStructByPos[Listed])
	if err != nil {
		return nil, fmt.Errorf("list documents: %w", err)
	}
	return ls, nil
}

// Erased reports whether version of document docID was erased by a
// delete: a later tombstone of it is recorded, whatever the document's
// version now (it may have been re-added since).
func Erased(ctx context.Context, q manifest.Querier, docID string, version int64) (bool, error) {
	rows, err := q.Query(ctx, `SELECT EXISTS (SELECT 1 FROM document_deletions WHERE doc_id = $1 AND version > $2)`, docID, version)
	if err != nil {
		return false, fmt.Errorf("read deletions: %w", err)
	}
	erased, err := pgx.CollectExactlyOneRow(rows, pgx.RowTo[bool])
	if err != nil {
		return false, fmt.Errorf("read deletions: %w", err)
	}
	return erased, nil
}
