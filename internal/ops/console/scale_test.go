package console

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"sort"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/dev/testenv"
	"github.com/sluicehq/sluice/internal/store/deadletter"
)

// TestConsoleScale fills dead_letters with generated rows and times what
// the list page does: the first page, a keyset page deep in the table,
// counts with filters and a full list request. It runs with 20,000 rows by
// default, checking the pages, and with 1,000,000 when
// SLUICE_CONSOLE_SCALE=1 (run it with -v to see the timings).
func TestConsoleScale(t *testing.T) {
	t.Parallel()
	n := 20000
	if os.Getenv("SLUICE_CONSOLE_SCALE") == "1" {
		n = 1_000_000
	}
	ctx := context.Background()
	db := testenv.NewDatabase(t)
	start := time.Now()
	_, err := db.Pool.Exec(ctx, `
		INSERT INTO dead_letters (dead_letter_id, doc_id, chunk_index, version, source_id, source_native_id, run_id,
		    disposition, error_class, error_detail, stage, attempts, payload, last_outbox_id,
		    first_failed_at, last_failed_at, next_retry_at, resolved_at)
		SELECT 'dl-' || lpad(i::text, 8, '0'), 'doc-' || i, 0, 1, 'src-' || (i % 8), 'native/' || i, 'run-' || (i % 50),
		       CASE WHEN i % 50 = 0 THEN 'escalate' WHEN i % 4 = 1 THEN 'quarantine' ELSE 'retry' END,
		       (ARRAY['transient_exhausted', 'bad_request', 'invalid_encoding', 'empty_text', 'context_length_exceeded', 'rate_limited'])[1 + i % 6],
		       'HTTP ' || (ARRAY['503 upstream unavailable', '400 unsupported token', '413 request too large', '429 slow down'])[1 + i % 4],
		       (ARRAY['embed', 'store', 'decode'])[1 + i % 3], 1 + i % 6,
		       convert_to('{"text":"chunk ' || i || '"}', 'UTF8'), i,
		       now() - i * interval '2 seconds', now() - i * interval '2 seconds',
		       now() + (i % 100 - 50) * interval '1 minute',
		       CASE WHEN i % 10 = 0 THEN now() END
		FROM generate_series(1, $1::int) i`, n)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Pool.Exec(ctx, `ANALYZE dead_letters`); err != nil {
		t.Fatal(err)
	}
	t.Logf("inserted %d dead letters in %s", n, time.Since(start).Round(time.Millisecond))

	open := deadletter.Filter{State: deadletter.StateOpen}
	first, next := timedPage(t, db, fmt.Sprintf("first page (newest, open), %d rows", n), listQuery{Filter: open, Sort: sortNewest, Limit: 50})
	second, _ := timedPage(t, db, "second page", listQuery{Filter: open, Sort: sortNewest, After: next, Limit: 50})
	checkOrder(t, append(first, second...))

	var deep cursor
	if err := db.Pool.QueryRow(ctx, `
		SELECT last_failed_at, attempts, dead_letter_id FROM dead_letters WHERE resolved_at IS NULL
		ORDER BY last_failed_at DESC, dead_letter_id DESC OFFSET $1 LIMIT 1`, n*9/20).Scan(&deep.at, &deep.attempts, &deep.id); err != nil {
		t.Fatal(err)
	}
	page, _ := timedPage(t, db, "deep keyset page (row ~45% in)", listQuery{Filter: open, Sort: sortNewest, After: &deep, Limit: 50})
	if len(page) != 50 || !page[0].LastFailedAt.Before(deep.at) {
		t.Errorf("deep page: %d rows starting %v; want 50 after %v", len(page), page[0].LastFailedAt, deep.at)
	}
	checkOrder(t, page)
	timedPage(t, db, "deep keyset page, most attempts first", listQuery{Filter: open, Sort: sortAttempts, After: &deep, Limit: 50})
	timedPage(t, db, "first page filtered (src-3, bad_request, open)", listQuery{Filter: deadletter.Filter{Source: "src-3", ErrorClass: "bad_request", State: deadletter.StateOpen}, Sort: sortNewest, Limit: 50})

	for _, c := range []struct {
		name string
		f    deadletter.Filter
		want int
	}{
		{"count, filtered (src-3, bad_request, open)", deadletter.Filter{Source: "src-3", ErrorClass: "bad_request", State: deadletter.StateOpen}, -1},
		{"count, error_detail search", deadletter.Filter{Detail: "unsupported token"}, n / 4},
		{"count, all open", open, n - n/10},
	} {
		start := time.Now()
		got, _, err := deadletter.Count(ctx, db.Pool, c.f, 0)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%-50s %8.1f ms (%d)", c.name, ms(time.Since(start)), got)
		if c.want >= 0 && got != int64(c.want) {
			t.Errorf("%s: %d; want %d", c.name, got, c.want)
		}
	}

	start = time.Now()
	if got, capped, err := deadletter.Count(ctx, db.Pool, open, listCountCap); err != nil || capped != (n-n/10 > listCountCap) {
		t.Errorf("capped count: %d, capped %v, %v", got, capped, err)
	}
	t.Logf("%-50s %8.1f ms", fmt.Sprintf("count, all open, capped at %d", listCountCap), ms(time.Since(start)))
	start = time.Now()
	if _, err := deadletter.ReadChoices(ctx, db.Pool); err != nil {
		t.Fatal(err)
	}
	t.Logf("%-50s %8.1f ms", "filter choices (loose index scans)", ms(time.Since(start)))

	srv, err := New(Config{Tokens: []Token{{Principal: "scale", Role: Operator, Secret: "scale-test-token-0123456789"}}}, db.Pool, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/dead-letters", "/dead-letters?source=src-3&class=bad_request", "/"} {
		req := httptest.NewRequest(http.MethodGet, path, nil)
		req.Header.Set("Authorization", "Bearer scale-test-token-0123456789")
		rec := httptest.NewRecorder()
		start := time.Now()
		srv.Handler().ServeHTTP(rec, req)
		t.Logf("%-50s %8.1f ms (HTTP %d)", "GET "+path, ms(time.Since(start)), rec.Code)
		if rec.Code != http.StatusOK {
			t.Errorf("GET %s: %d", path, rec.Code)
		}
	}
}

// timedPage reads a page, best of three, and logs the time.
func timedPage(t *testing.T, db *testenv.Database, name string, q listQuery) ([]listItem, *cursor) {
	t.Helper()
	var items []listItem
	var next *cursor
	times := make([]time.Duration, 3)
	for i := range times {
		start := time.Now()
		var err error
		if items, next, err = listPage(context.Background(), db.Pool, q); err != nil {
			t.Fatal(err)
		}
		times[i] = time.Since(start)
	}
	sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
	t.Logf("%-50s %8.1f ms (best of 3; %d rows)", name, ms(times[0]), len(items))
	return items, next
}

// checkOrder fails unless the rows are newest first with no repeats.
func checkOrder(t *testing.T, items []listItem) {
	t.Helper()
	ids := map[string]bool{}
	for i, it := range items {
		if ids[it.ID] {
			t.Fatalf("row %s appears twice across pages", it.ID)
		}
		ids[it.ID] = true
		if i > 0 && items[i-1].LastFailedAt.Before(it.LastFailedAt) {
			t.Fatalf("rows out of order at %d", i)
		}
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
