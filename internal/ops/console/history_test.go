package console_test

import (
	"context"
	"slices"
	"testing"

	"github.com/sluicehq/sluice/internal/dev/testenv"
)

// Every writer of dead_letters leaves the same trail: a new failure (a
// higher outbox id), a replay mark, an unmark after a failed dispatch, and
// the resolution each append one history row; other updates append none.
func TestDeadLetterHistory(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testenv.NewDatabase(t)
	for _, sql := range []string{
		`INSERT INTO dead_letters (dead_letter_id, doc_id, chunk_index, version, source_id, source_native_id, disposition,
		    error_class, stage, attempts, last_outbox_id, first_failed_at, last_failed_at)
		 VALUES ('h1', 'doc', 0, 1, 'wiki', 'a.md', 'retry', 'rate_limited', 'embed', 3, 1, now(), now())`,
		`UPDATE dead_letters SET last_outbox_id = 2, error_class = 'transient_exhausted', attempts = 6 WHERE dead_letter_id = 'h1'`,
		`UPDATE dead_letters SET payload_purged_at = now() WHERE dead_letter_id = 'h1'`,
		`UPDATE dead_letters SET replayed_at = now(), replay_id = 'rp-1' WHERE dead_letter_id = 'h1'`,
		`UPDATE dead_letters SET replayed_at = NULL, replay_id = NULL WHERE dead_letter_id = 'h1'`,
		`UPDATE dead_letters SET replayed_at = now(), replay_id = 'rp-2' WHERE dead_letter_id = 'h1'`,
		`UPDATE dead_letters SET resolved_at = now() WHERE dead_letter_id = 'h1'`,
	} {
		if _, err := db.Pool.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	rows, err := db.Pool.Query(ctx, `SELECT event || ':' || coalesce(error_class, replay_id, '') FROM dead_letter_history WHERE dead_letter_id = 'h1' ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for rows.Next() {
		var e string
		if err := rows.Scan(&e); err != nil {
			t.Fatal(err)
		}
		got = append(got, e)
	}
	want := []string{"failed:rate_limited", "failed:transient_exhausted", "replayed:rp-1", "unmarked:rp-1", "replayed:rp-2", "resolved:rp-2"}
	if !slices.Equal(got, want) {
		t.Errorf("history %v; want %v", got, want)
	}
}
