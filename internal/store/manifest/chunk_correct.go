package manifest

import "context"

// Correction is an operator's corrected payload for one parked chunk:
// the content hash and job it had (From) and the ones it takes (To).
type Correction struct {
	DocID    string
	Index    int
	Version  int64
	FromHash string
	ToHash   string
	// ToJob is the corrected job as its producer would have published
	// it, so that a re-drive from PostgreSQL sends the correction, not
	// the payload it replaces.
	ToJob []byte
}

// Correct sets the content hash and job of c's chunk to c's corrected
// ones, so that "already stored" checks and re-drives follow the
// correction. Only a Parked chunk of c's version whose hash is still
// c.FromHash changes: its status does not move. It reports whether the
// row changed. Undo it with the reverse Correction (From and To swapped,
// the old job as ToJob).
func Correct(ctx context.Context, q Querier, c Correction) (bool, error) {
	tag, err := q.Exec(ctx, `
		UPDATE ingest_manifest SET content_hash = $5, job = $6, updated_at = now()
		WHERE doc_id = $1 AND chunk_index = $2 AND version = $3 AND status = `+SQLParked+` AND content_hash = $4`,
		c.DocID, c.Index, c.Version, c.FromHash, c.ToHash, c.ToJob)
	if err != nil {
		return false, err
	}
	return tag.RowsAffected() == 1, nil
}
