package console_test

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/store/erase"
	"github.com/sluicehq/sluice/internal/store/runs"
	"github.com/sluicehq/sluice/pkg/messages"
)

// alphaDoc is the doc id of alpha's i-th fixture document.
func alphaDoc(i int) string { return messages.DocID("alpha", fmt.Sprintf("alpha/doc-%03d.md", i)) }

// deletedAt reads when document id was deleted, as the console prints it.
func (b *testBundle) deletedAt(t *testing.T, id string) string {
	t.Helper()
	var at time.Time
	if err := b.db.Pool.QueryRow(context.Background(), `SELECT deleted_at FROM documents WHERE doc_id = $1`, id).Scan(&at); err != nil {
		t.Fatal(err)
	}
	return at.UTC().Format("2006-01-02 15:04:05")
}

// A deleted document shows as deleted on its dead letter's page and on
// its own page, to a viewer: when, by whom, why, what the delete erased
// and that nothing is left; and no payload text appears.
func TestDocumentPageShowsADelete(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	id := alphaDoc(0)
	if _, err := erase.New(b.db.Pool, nil).Delete(ctx, erase.Request{SourceID: "alpha", DocIDs: []string{id},
		By: "cli:carol", Reason: "removed at the source, ticket 7", Execute: true}); err != nil {
		t.Fatal(err)
	}
	at := b.deletedAt(t, id)
	deleted := `<td id="deleted">` + at + ` by cli:carol: removed at the source, ticket 7</td>`
	left := `<td id="left">0 vectors, 0 text rows, 0 payloads `

	code, body := b.get(t, "/dead-letters/dl-alpha-000", viewerSecret)
	if code != http.StatusOK || !strings.Contains(body, `<a id="document" href="/documents/`+id+`">`) ||
		!strings.Contains(body, "<td>deleted (version 2)</td>") || !strings.Contains(body, deleted) || !strings.Contains(body, left) {
		t.Errorf("GET /dead-letters/dl-alpha-000: %d, want a link to the document, %q and %q in:\n%s", code, deleted, left, body)
	}

	code, body = b.get(t, "/documents/"+id, viewerSecret)
	erased := regexp.MustCompile(`<td>` + regexp.QuoteMeta(at) + `</td><td>2</td><td>cli:carol</td><td>–</td><td>removed at the source, ticket 7</td>` +
		`<td class="n">1</td><td class="n">0</td><td class="n">1</td><td class="n">1</td><td class="n">1</td>`)
	if code != http.StatusOK || !strings.Contains(body, `<td id="doc-status">deleted</td>`) || !strings.Contains(body, deleted) ||
		!strings.Contains(body, left) || !erased.MatchString(body) {
		t.Errorf("GET /documents/%s: %d, want it deleted, %q, %q and what was erased in:\n%s", id, code, deleted, left, body)
	}
	if strings.Contains(body, "alpha chunk number") {
		t.Errorf("GET /documents/%s shows payload text:\n%s", id, body)
	}

	// A document not deleted says so, and shows no delete; a version of
	// it that failed says which version search serves instead.
	if _, err := b.db.Pool.Exec(ctx, `UPDATE documents SET version = 2, live_version = 1 WHERE doc_id = $1`, alphaDoc(1)); err != nil {
		t.Fatal(err)
	}
	code, body = b.get(t, "/documents/"+alphaDoc(1), viewerSecret)
	if code != http.StatusOK || !strings.Contains(body, `<td id="doc-status">failed</td>`) || !strings.Contains(body, "Never deleted.") ||
		strings.Contains(body, `id="deleted"`) || !strings.Contains(body, `<td id="doc-serving">search serves version 1: version 2 failed`) {
		t.Errorf("GET /documents/%s: %d, want it failed, version 1 served, and never deleted in:\n%s", alphaDoc(1), code, body)
	}
	if code, _ := b.get(t, "/documents/no-such-doc", viewerSecret); code != http.StatusNotFound {
		t.Errorf("GET /documents/no-such-doc: %d, want 404", code)
	}
	b.assertNoSecret(t)
}

// A sync run's deletes show on the Runs page and the run's page: how
// many documents it deleted and their source ids, the first few named.
func TestRunPagesListASyncRunsDeletes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	if err := runs.Open(ctx, b.db.Pool, "run-sync", "alpha", time.Second); err != nil {
		t.Fatal(err)
	}
	ids := make([]string, 7)
	for i := range ids {
		ids[i] = alphaDoc(i)
	}
	if _, err := erase.New(b.db.Pool, nil).Delete(ctx, erase.Request{SourceID: "alpha", DocIDs: ids,
		By: "sync:run-sync", Reason: "gone at the source", RunID: "run-sync", Execute: true}); err != nil {
		t.Fatal(err)
	}
	named := `7: alpha/doc-000.md, alpha/doc-001.md, alpha/doc-002.md, alpha/doc-003.md, alpha/doc-004.md and 2 more`

	code, body := b.get(t, "/runs", viewerSecret)
	row := regexp.MustCompile(`run-sync</a></td><td>alpha</td>.*<td><span class="deleted-docs">` + regexp.QuoteMeta(named) + `</span></td></tr>`)
	other := regexp.MustCompile(`run-beta</a></td>.*<td>–</td></tr>`)
	if code != http.StatusOK || !row.MatchString(body) || !other.MatchString(body) {
		t.Errorf("GET /runs: %d, want run-sync with %q and run-beta with none in:\n%s", code, named, body)
	}
	code, body = b.get(t, "/runs/run-sync", viewerSecret)
	if want := `<td id="run-deleted"><span class="deleted-docs">` + named + `</span></td>`; code != http.StatusOK || !strings.Contains(body, want) {
		t.Errorf("GET /runs/run-sync: %d, want %q in:\n%s", code, want, body)
	}
	// Each deleted document's page names the run that deleted it.
	_, body = b.get(t, "/documents/"+ids[6], viewerSecret)
	if want := ` by sync:run-sync (run <a href="/runs/run-sync">run-sync</a>): gone at the source</td>`; !strings.Contains(body, want) {
		t.Errorf("GET /documents/%s: want %q in:\n%s", ids[6], want, body)
	}
}
