package console_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/ops/console"
)

// Every console statement runs under statement_timeout: a page whose
// query waits on a lock fails after the timeout instead of holding a
// connection for ever.
func TestStatementsTimeOut(t *testing.T) {
	t.Parallel()
	b := setupWith(t, func(c *console.Config) { c.StatementTimeout = 300 * time.Millisecond })
	ctx := context.Background()
	tx, err := b.db.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, `LOCK TABLE dead_letters IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodGet, b.srv.URL+"/dead-letters", nil)
	req.Header.Set("Authorization", "Bearer "+viewerSecret)
	client := &http.Client{Timeout: 20 * time.Second}
	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("the list page waited on the lock for %s: %v", time.Since(start).Round(time.Second), err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusInternalServerError || !strings.Contains(b.log.String(), "statement timeout") {
		t.Errorf("list page under a lock: %d after %s; want 500 with the statement timeout in the log", resp.StatusCode, time.Since(start))
	}
}
