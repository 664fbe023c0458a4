package console_test

import (
	"context"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/jackc/pgx/v5"
)

// batchError is the provider's error of the failed batch.
const batchError = "invalid_request: model not found"

// seedBatches writes two bulk batches: 1, of alpha, at the provider with
// its cancel requested; 2, of beta, requeued after the provider failed
// it.
func (b *testBundle) seedBatches(t *testing.T) {
	t.Helper()
	batch := &pgx.Batch{}
	batch.Queue(`
		INSERT INTO bulk_batches (source_id, state, input_file_id, provider_batch_id, requests, inputs, bytes, tokens,
		    opened_at, sealed_at, uploaded_at, create_requested_at, created_at, cancel_requested_at, updated_at)
		VALUES ('alpha', 'in_progress', 'file-1', 'batch-p1', 3, 3, 900, 1234,
		    now() - interval '2 hours', now() - interval '1 hour', now() - interval '1 hour', now() - interval '1 hour',
		    now() - interval '1 hour', now(), now())`)
	batch.Queue(`
		INSERT INTO bulk_batches (source_id, state, input_file_id, provider_batch_id, requests, inputs, bytes, tokens, parked, requeued,
		    opened_at, sealed_at, uploaded_at, create_requested_at, created_at, finished_at, settled_at, updated_at, last_error,
		    outcome, error_code, error_message)
		VALUES ('beta', 'requeued', 'file-2', 'batch-p2', 2, 2, 500, 70, 1, 1,
		    now() - interval '3 hours', now() - interval '3 hours', now() - interval '3 hours', now() - interval '3 hours',
		    now() - interval '3 hours', now() - interval '2 hours', now() - interval '2 hours', now(), $1,
		    'failed', 'invalid_request', $1)`, batchError)
	if err := b.db.Pool.SendBatch(context.Background(), batch).Close(); err != nil {
		t.Fatalf("seed batches: %v", err)
	}
}

// The Batches page lists bulk batches newest first by state, as the
// console's role; the provider's error is for operators only.
func TestBatchesPage(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.seedBatches(t)
	alpha := regexp.MustCompile(`<tr id="batch-1"><td>1</td><td>alpha</td><td class="n">1</td><td>in progress <small>cancel requested</small></td><td class="outcome">–</td><td class="n">0</td><td class="n">3</td><td class="n">1234</td>`)

	code, body := b.get(t, "/batches", viewerSecret)
	if code != http.StatusOK || !alpha.MatchString(body) || !strings.Contains(body, `id="batch-2"`) ||
		strings.Index(body, `id="batch-2"`) > strings.Index(body, `id="batch-1"`) {
		t.Errorf("GET /batches as viewer: %d, want batches 2 then 1 in:\n%s", code, body)
	}
	if strings.Contains(body, batchError) || !strings.Contains(body, "operators only") {
		t.Errorf("a viewer sees the provider's error, or is not told it is withheld:\n%s", body)
	}
	if !strings.Contains(body, `<td class="outcome">failed (invalid_request)</td>`) {
		t.Errorf("a viewer is not told batch 2 failed, with the provider's code:\n%s", body)
	}
	if code, body = b.get(t, "/batches", operatorSecret); code != http.StatusOK || !strings.Contains(body, batchError) {
		t.Errorf("GET /batches as operator: %d, want the provider's error in:\n%s", code, body)
	}
	if !strings.Contains(body, `<td class="outcome">failed (invalid_request: `) {
		t.Errorf("an operator is not told how batch 2 failed:\n%s", body)
	}
	if code, body = b.get(t, "/batches?state=requeued", viewerSecret); code != http.StatusOK || strings.Contains(body, `id="batch-1"`) || !strings.Contains(body, `id="batch-2"`) {
		t.Errorf("GET /batches?state=requeued: %d, want batch 2 only in:\n%s", code, body)
	}
	if code, _ = b.get(t, "/batches?state=running", viewerSecret); code != http.StatusBadRequest {
		t.Errorf("GET /batches?state=running: %d, want 400", code)
	}
}

// An operator reaches the Batches page from the navigation and filters it
// by source.
func TestBrowserBatches(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.seedBatches(t)
	ctx := browser(t)
	signIn(t, ctx, b.srv.URL, operatorSecret)
	run(t, ctx, "open the Batches page from the navigation",
		chromedp.Click(chromedp.CSS(`header nav a[href="/batches"]`)),
		waitFor(`document.querySelector('header nav a[aria-current="page"]')?.textContent === "Batches"`),
		waitFor(`(document.querySelector("#batch-1")?.textContent || "").includes("alpha")`),
		waitFor(`(document.querySelector("#batch-1")?.textContent || "").includes("1234")`),
		waitFor(`(document.querySelector("#batch-2")?.textContent || "").includes("`+batchError+`")`),
	)
	run(t, ctx, "filter by source",
		chromedp.SetValue(chromedp.CSS("#f-source"), "beta"),
		chromedp.Click(chromedp.CSS("#apply")),
		waitFor(`!document.querySelector("#batch-1") && !!document.querySelector("#batch-2")`),
	)
	if loc := get(t, ctx, "location", chromedp.Location()); !strings.Contains(loc, "source=beta") {
		t.Errorf("after filtering: URL %s, want the filter in it", loc)
	}
}
