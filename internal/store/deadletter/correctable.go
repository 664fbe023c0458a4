package deadletter

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// Correctable is what a correction reads of its dead letter and of its
// chunk's manifest row (the Manifest fields, nil when there is none).
type Correctable struct {
	DocID, Source, NativeID string
	// Class is the error class of its latest failure.
	Class                 string
	ChunkIndex, ReplayGen int
	Version               int64
	Payload               []byte
	Resolved, Escalated   bool
	// Dispatched is whether its State is StateDispatched (resolved or
	// not); DispatchedBy names the replay that marked it.
	Dispatched      bool
	DispatchedBy    string
	ManifestVersion *int64
	ManifestStatus  *string
	ManifestHash    *string
	ManifestJob     []byte
}

// ReadCorrectable reads dead letter id for a correction, locking its row
// with lock (call it then in the correction's transaction); ErrNotFound
// when there is none.
func ReadCorrectable(ctx context.Context, q Reader, id string, lock bool) (*Correctable, error) {
	sql := `
	SELECT d.doc_id, d.source_id, d.source_native_id, d.error_class, d.chunk_index, d.replay_gen, d.version, d.payload,
	       d.resolved_at IS NOT NULL, ` + escalatedSQL + `, ` + dispatchedSQL + `, coalesce(d.replay_id, ''),
	       m.version, m.status, m.content_hash, m.job
	FROM dead_letters d LEFT JOIN ingest_manifest m ON m.doc_id = d.doc_id AND m.chunk_index = d.chunk_index
	WHERE d.dead_letter_id = $1`
	if lock {
		sql += ` FOR UPDATE OF d`
	}
	var c Correctable
	err := q.QueryRow(ctx, sql, id).Scan(&c.DocID, &c.Source, &c.NativeID, &c.Class, &c.ChunkIndex, &c.ReplayGen, &c.Version, &c.Payload,
		&c.Resolved, &c.Escalated, &c.Dispatched, &c.DispatchedBy,
		&c.ManifestVersion, &c.ManifestStatus, &c.ManifestHash, &c.ManifestJob)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("read dead letter %s: %w", id, err)
	}
	return &c, nil
}

// Rederivable is what re-deriving a dead letter's chunk from its source
// reads: the dead letter's chunk and version, and its document's current
// version, content hash and chunk count (DocVersion nil when the document
// has no row).
type Rederivable struct {
	NativeID    string
	ChunkIndex  int
	Version     int64
	DocVersion  *int64
	ContentHash string
	ChunkCount  int
}

// ReadRederivable reads dead letter id for a re-derivation; ErrNotFound
// when there is none.
func ReadRederivable(ctx context.Context, q Reader, id string) (*Rederivable, error) {
	var r Rederivable
	err := q.QueryRow(ctx, `
		SELECT d.source_native_id, d.chunk_index, d.version, doc.version, coalesce(doc.content_hash, ''), coalesce(doc.chunk_count, 0)
		FROM dead_letters d LEFT JOIN documents doc ON doc.doc_id = d.doc_id
		WHERE d.dead_letter_id = $1`, id).Scan(&r.NativeID, &r.ChunkIndex, &r.Version, &r.DocVersion, &r.ContentHash, &r.ChunkCount)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("read dead letter %s: %w", id, err)
	}
	return &r, nil
}
