package deadletter

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/sluicehq/sluice/internal/store/manifest"
)

// DefaultMaxKeptFileBytes is the largest parked file whose bytes are
// kept (file_bytes) for a replay, unless configured otherwise: a larger
// one is parked with its bytes not kept.
const DefaultMaxKeptFileBytes = 64 << 20

// FileRef names the bytes a parked file's dead letter keeps.
type FileRef struct {
	// DeadLetterID and DocID are the dead letter's.
	DeadLetterID, DocID string
	// SHA256 is the hex SHA-256 of the bytes.
	SHA256 string
	// Recognised is the text OCR read from a scan parked below its bar
	// (ocr_low_confidence), kept beside its bytes for the person who
	// keys its text in; empty for any other file.
	Recognised string
}

// KeepFile keeps data, the bytes of the file parked as ref's dead
// letter, in file_bytes, once per content however many dead letters
// refer to it, and records ref (replacing the dead letter's earlier
// reference). Call it in the transaction that writes the dead letter
// to the outbox, so that the bytes are kept exactly when it is parked.
// The content's row is locked first, so that retention cannot purge it
// between the check and the reference.
func KeepFile(ctx context.Context, q manifest.Querier, ref FileRef, data []byte) error {
	rows, err := q.Query(ctx, `SELECT 1 FROM file_bytes WHERE sha256 = $1 FOR UPDATE`, ref.SHA256)
	var found []int
	if err == nil {
		found, err = pgx.CollectRows(rows, pgx.RowTo[int])
	}
	switch {
	case err == nil && len(found) == 0:
		if _, err := q.Exec(ctx, `INSERT INTO file_bytes (sha256, bytes, size) VALUES ($1, $2, $3)
			ON CONFLICT (sha256) DO NOTHING`, ref.SHA256, data, len(data)); err != nil {
			return fmt.Errorf("keep the bytes of %s: %w", ref.DocID, err)
		}
	case err != nil:
		return fmt.Errorf("keep the bytes of %s: %w", ref.DocID, err)
	}
	if _, err := q.Exec(ctx, `INSERT INTO file_bytes_refs (dead_letter_id, doc_id, sha256, recognised_text) VALUES ($1, $2, $3, $4)
		ON CONFLICT (dead_letter_id) DO UPDATE SET doc_id = EXCLUDED.doc_id, sha256 = EXCLUDED.sha256,
			recognised_text = EXCLUDED.recognised_text, created_at = now()`,
		ref.DeadLetterID, ref.DocID, ref.SHA256, nullIfEmpty(ref.Recognised)); err != nil {
		return fmt.Errorf("keep the bytes of %s: %w", ref.DocID, err)
	}
	return nil
}

// KeptFile is what is kept of a parked file's bytes.
type KeptFile struct {
	SHA256 string
	Size   int64
	// RecognisedBytes is the size of the text OCR recognised in it, kept
	// beside it (ReadRecognised); 0 when none is.
	RecognisedBytes int64
}

// KeptFileOf returns what dead letter id keeps of its file's bytes;
// false when it keeps none (never kept, or purged).
func KeptFileOf(ctx context.Context, q Reader, id string) (KeptFile, bool, error) {
	var k KeptFile
	err := q.QueryRow(ctx, `SELECT b.sha256, b.size, coalesce(octet_length(r.recognised_text), 0)
		FROM file_bytes_refs r JOIN file_bytes b USING (sha256)
		WHERE r.dead_letter_id = $1`, id).Scan(&k.SHA256, &k.Size, &k.RecognisedBytes)
	if errors.Is(err, pgx.ErrNoRows) {
		return KeptFile{}, false, nil
	}
	if err != nil {
		return KeptFile{}, false, fmt.Errorf("read the kept bytes of %s: %w", id, err)
	}
	return k, true, nil
}

// KeptBytes returns the bytes dead letter id keeps of its file and their
// SHA-256; ErrNotFound when it keeps none.
func KeptBytes(ctx context.Context, q Reader, id string) ([]byte, string, error) {
	var data []byte
	var sum string
	err := q.QueryRow(ctx, `SELECT b.bytes, b.sha256 FROM file_bytes_refs r JOIN file_bytes b USING (sha256)
		WHERE r.dead_letter_id = $1`, id).Scan(&data, &sum)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, "", ErrNotFound
	}
	if err != nil {
		return nil, "", fmt.Errorf("read the kept bytes of %s: %w", id, err)
	}
	return data, sum, nil
}

// PurgeFileRefs enforces retention on file_bytes_refs: a parked file's
// reference goes with its dead letter's payload, once retention or an
// erasure purged it. It purges at most limit references.
func PurgeFileRefs(ctx context.Context, q manifest.Querier, limit int) (int64, error) {
	tag, err := q.Exec(ctx, `
		DELETE FROM file_bytes_refs WHERE dead_letter_id IN (
			SELECT r.dead_letter_id FROM file_bytes_refs r JOIN dead_letters d USING (dead_letter_id)
			WHERE d.payload_purged_at IS NOT NULL
			ORDER BY r.dead_letter_id LIMIT $1 FOR UPDATE OF r SKIP LOCKED)`, limit)
	if err != nil {
		return 0, fmt.Errorf("purge kept file references: %w", err)
	}
	return tag.RowsAffected(), nil
}

// PurgeFileBytes deletes at most limit kept contents no dead letter
// refers to any more. A content a parked file is being kept under right
// now is locked (KeepFile), so it is skipped.
func PurgeFileBytes(ctx context.Context, q manifest.Querier, limit int) (int64, error) {
	tag, err := q.Exec(ctx, `
		DELETE FROM file_bytes WHERE sha256 IN (
			SELECT b.sha256 FROM file_bytes b
			WHERE NOT EXISTS (SELECT 1 FROM file_bytes_refs r WHERE r.sha256 = b.sha256)
			ORDER BY b.sha256 LIMIT $1 FOR UPDATE SKIP LOCKED)`, limit)
	if err != nil {
		return 0, fmt.Errorf("purge kept file bytes: %w", err)
	}
	return tag.RowsAffected(), nil
}

// eraseFileBytes deletes the references of the documents ids' parked
// files and the contents nothing else refers to.
func eraseFileBytes(ctx context.Context, q manifest.Querier, ids []string) error {
	rows, err := q.Query(ctx, `DELETE FROM file_bytes_refs WHERE doc_id = ANY($1) RETURNING sha256`, ids)
	if err != nil {
		return fmt.Errorf("erase kept file bytes: %w", err)
	}
	sums, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || len(sums) == 0 {
		if err != nil {
			return fmt.Errorf("erase kept file bytes: %w", err)
		}
		return nil
	}
	if _, err := q.Exec(ctx, `DELETE FROM file_bytes b WHERE b.sha256 = ANY($1)
		AND NOT EXISTS (SELECT 1 FROM file_bytes_refs r WHERE r.sha256 = b.sha256)`, sums); err != nil {
		return fmt.Errorf("erase kept file bytes: %w", err)
	}
	return nil
}

// StageProduce is the stage of a parked file's dead letter: the
// producer parked it whole, before it was chunked.
const StageProduce = "produce"

// ParkedFiles returns the ids of at most limit open dead letters of
// parked files that f selects (its Stage is taken as StageProduce),
// not dispatched by a replay since their last failure, oldest failure
// first.
func ParkedFiles(ctx context.Context, q Reader, f Filter, limit int) ([]string, error) {
	f.Stage, f.State = StageProduce, StateOpen
	var args Args
	where := f.Where(&args)
	rows, err := q.Query(ctx, `SELECT d.dead_letter_id FROM dead_letters d WHERE `+where+` AND `+notDispatched+`
		AND d.disposition <> 'escalate' ORDER BY d.last_failed_at, d.dead_letter_id LIMIT `+args.Add(limit), args...)
	if err != nil {
		return nil, fmt.Errorf("select parked files: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("select parked files: %w", err)
	}
	return ids, nil
}

// KeptFileRefs counts, for each document whose parked files' bytes are
// kept, their references: the erasure check names a deleted document
// that still has any.
func KeptFileRefs(ctx context.Context, q manifest.Querier) (map[string]int, error) {
	rows, err := q.Query(ctx, `SELECT doc_id, count(*)::int FROM file_bytes_refs GROUP BY doc_id`)
	if err != nil {
		return nil, fmt.Errorf("count kept files: %w", err)
	}
	refs := map[string]int{}
	var id string
	var n int
	if _, err := pgx.ForEachRow(rows, []any{&id, &n}, func() error {
		refs[id] = n
		return nil
	}); err != nil {
		return nil, fmt.Errorf("count kept files: %w", err)
	}
	return refs, nil
}

// ErrNoRecognisedText is a dead letter that keeps no recognised text:
// it is not a scan parked below its bar, it was parked before the text
// was kept, or retention purged it with the bytes.
var ErrNoRecognisedText = errors.New("no recognised text is kept")

// ReadRecognised returns the text OCR recognised in the scan dead letter
// id keeps (FileRef.Recognised); ErrNoRecognisedText when it keeps none.
func ReadRecognised(ctx context.Context, q Reader, id string) (string, error) {
	var text *string
	err := q.QueryRow(ctx, `SELECT recognised_text FROM file_bytes_refs WHERE dead_letter_id = $1`, id).Scan(&text)
	switch {
	case errors.Is(err, pgx.ErrNoRows) || err == nil && text == nil:
		return "", ErrNoRecognisedText
	case err != nil:
		return "", fmt.Errorf("read the recognised text of %s: %w", id, err)
	}
	return *text, nil
}

// nullIfEmpty is s, or NULL when s is empty.
func nullIfEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
