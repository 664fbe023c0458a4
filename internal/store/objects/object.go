package objects

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Querier is what the statements run on: a pool, a connection or the
// caller's transaction.
type Querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

var (
	_ Querier = pgx.Tx(nil)
	_ Querier = (*pgx.Conn)(nil)
	_ Querier = (*pgxpool.Pool)(nil)
)

// Object is what the ledger holds of one object.
type Object struct {
	// Key is the object's key in its bucket.
	Key string
	// ETag is the object's entity tag as the store gives it, quotes
	// included.
	ETag string
	// VersionID is the object's version id where the bucket keeps
	// versions; empty otherwise.
	VersionID string
	// Size is the object's size in bytes.
	Size int64
	// DocID is the document recorded from the object.
	DocID string
}

// Same reports whether o and listed describe the same content: the same
// ETag and size, and the same version id when both name one (a listing
// of current objects names none).
func (o Object) Same(listed Object) bool {
	if o.Size != listed.Size || o.ETag != listed.ETag {
		return false
	}
	return o.VersionID == "" || listed.VersionID == "" || o.VersionID == listed.VersionID
}

// Read returns what the ledger holds of keys of bucket for source, by
// key; keys it holds nothing of are absent.
func Read(ctx context.Context, q Querier, source, bucket string, keys []string) (map[string]Object, error) {
	rows, err := q.Query(ctx, `
		SELECT object_key, etag, version_id, size, doc_id FROM object_ledger
		WHERE source_id = $1 AND bucket = $2 AND object_key = ANY($3)`, source, bucket, keys)
	if err != nil {
		return nil, fmt.Errorf("read object ledger: %w", err)
	}
	got := make(map[string]Object, len(keys))
	var o Object
	if _, err := pgx.ForEachRow(rows, []any{&o.Key, &o.ETag, &o.VersionID, &o.Size, &o.DocID}, func() error {
		got[o.Key] = o
		return nil
	}); err != nil {
		return nil, fmt.Errorf("read object ledger: %w", err)
	}
	return got, nil
}

// Record writes objs of bucket as recorded by run runID, replacing what
// the ledger held of them. Call it only once their documents are
// recorded.
func Record(ctx context.Context, q Querier, source, bucket, runID string, objs []Object) error {
	if len(objs) == 0 {
		return nil
	}
	keys, etags, versions, sizes, docs := make([]string, len(objs)), make([]string, len(objs)), make([]string, len(objs)), make([]int64, len(objs)), make([]string, len(objs))
	for i, o := range objs {
		keys[i], etags[i], versions[i], sizes[i], docs[i] = o.Key, o.ETag, o.VersionID, o.Size, o.DocID
	}
	_, err := q.Exec(ctx, `
		INSERT INTO object_ledger (source_id, bucket, object_key, etag, version_id, size, last_seen_run, doc_id)
		SELECT $1, $2, k, e, v, s, $3, d FROM unnest($4::text[], $5::text[], $6::text[], $7::bigint[], $8::text[]) AS t(k, e, v, s, d)
		ON CONFLICT (source_id, bucket, object_key) DO UPDATE SET etag = EXCLUDED.etag, version_id = EXCLUDED.version_id,
			size = EXCLUDED.size, last_seen_run = EXCLUDED.last_seen_run, doc_id = EXCLUDED.doc_id, recorded_at = now()`,
		source, bucket, runID, keys, etags, versions, sizes, docs)
	if err != nil {
		return fmt.Errorf("record objects: %w", err)
	}
	return nil
}

// Touch records that run runID's listing named keys of bucket, unchanged.
func Touch(ctx context.Context, q Querier, source, bucket, runID string, keys []string) error {
	if len(keys) == 0 {
		return nil
	}
	if _, err := q.Exec(ctx, `
		UPDATE object_ledger SET last_seen_run = $3
		WHERE source_id = $1 AND bucket = $2 AND object_key = ANY($4)`, source, bucket, runID, keys); err != nil {
		return fmt.Errorf("touch objects: %w", err)
	}
	return nil
}

// Forget removes keys of bucket from the ledger: objects deleted from the
// store whose documents are deleted.
func Forget(ctx context.Context, q Querier, source, bucket string, keys []string) error {
	if len(keys) == 0 {
		return nil
	}
	if _, err := q.Exec(ctx, `DELETE FROM object_ledger WHERE source_id = $1 AND bucket = $2 AND object_key = ANY($3)`,
		source, bucket, keys); err != nil {
		return fmt.Errorf("forget objects: %w", err)
	}
	return nil
}

// ForgetUnseen removes the objects of bucket under prefix that run
// runID's listing did not name, and returns how many: call it after a
// complete listing whose sync deleted their documents.
func ForgetUnseen(ctx context.Context, q Querier, source, bucket, prefix, runID string) (int64, error) {
	tag, err := q.Exec(ctx, `
		DELETE FROM object_ledger
		WHERE source_id = $1 AND bucket = $2 AND starts_with(object_key, $3) AND last_seen_run <> $4`,
		source, bucket, prefix, runID)
	if err != nil {
		return 0, fmt.Errorf("forget unseen objects: %w", err)
	}
	return tag.RowsAffected(), nil
}

// Sources returns those of names that have objects in the ledger: the
// sources that are S3 prefixes.
func Sources(ctx context.Context, q Querier, names []string) (map[string]bool, error) {
	rows, err := q.Query(ctx, `
		SELECT n FROM unnest($1::text[]) AS n WHERE EXISTS (SELECT 1 FROM object_ledger WHERE source_id = n)`, names)
	if err != nil {
		return nil, fmt.Errorf("read object ledger sources: %w", err)
	}
	got := map[string]bool{}
	var n string
	if _, err := pgx.ForEachRow(rows, []any{&n}, func() error {
		got[n] = true
		return nil
	}); err != nil {
		return nil, fmt.Errorf("read object ledger sources: %w", err)
	}
	return got, nil
}
