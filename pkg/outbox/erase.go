package outbox

import (
	"context"
	"fmt"
	"regexp"
)

// jsonKey is what BlankField takes as a key or a field: it is written
// into the statement, so that an index on the expression serves it.
var jsonKey = regexp.MustCompile(`^[a-z_]+$`)

// BlankField sets the top-level string field field to "" in the payload
// of every row whose payload's key field is one of values, published or
// not, and returns how many rows held something there. An unpublished
// row is still published, its field blank; a message published from a
// row already is beyond reach, so callers keep what they may have to
// erase out of published payloads to begin with. key and field are
// lowercase letters and underscores; an index on (payload->>'<key>')
// spares the statement a scan of the table.
func BlankField(ctx context.Context, tx Tx, key string, values []string, field string) (int64, error) {
	if !jsonKey.MatchString(key) || !jsonKey.MatchString(field) {
		return 0, fmt.Errorf("outbox: blank %q by %q: use lowercase letters and underscores", field, key)
	}
	tag, err := tx.Exec(ctx, fmt.Sprintf(`
		UPDATE outbox SET payload = jsonb_set(payload, '{%[2]s}', '""')
		WHERE (payload->>'%[1]s') = ANY($1) AND coalesce(payload->>'%[2]s', '') <> ''`, key, field), values)
	if err != nil {
		return 0, fmt.Errorf("outbox: blank %s: %w", field, err)
	}
	return tag.RowsAffected(), nil
}
