package console_test

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/sluicehq/sluice/internal/store/sources"
)

// syncError is the last error of the seeded table source's sync.
const syncError = "connect to the application database: password authentication failed for user app"

// seedSources declares two sources beside the seeded documents' alpha:
// articles, a table source whose last sync failed, and manuals, an S3
// source a follower keeps live, synced with a lag of 1.25 s.
func (b *testBundle) seedSources(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	pool := b.db.Pool
	lag := 1250 * time.Millisecond
	err := errors.Join(
		sources.Add(ctx, pool, "articles", sources.KindTable, sources.Table{DSN: "env:APP_DSN", Table: "public.articles", ID: "id", Text: []string{"body"}}),
		sources.RecordSync(ctx, pool, "articles", nil, errors.New(syncError)),
		sources.RecordS3(ctx, pool, "manuals", sources.S3{URL: "s3://corpus/manuals/"}),
		sources.RecordSync(ctx, pool, "manuals", &lag, nil),
		sources.Followed(ctx, pool, "manuals"))
	if err != nil {
		t.Fatalf("seed sources: %v", err)
	}
}

// The Sources page lists the declared sources and those only documents
// name, by name, with their kind, mode, last sync, lag and documents; a
// sync's error is for operators only.
func TestSourcesPage(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.seedSources(t)
	code, body := b.get(t, "/sources", viewerSecret)
	if code != 200 {
		t.Fatalf("GET /sources as viewer: %d\n%s", code, body)
	}
	rows := regexp.MustCompile(`<tr id="source-([^"]+)">`).FindAllStringSubmatch(body, -1)
	var names []string
	for _, r := range rows {
		names = append(names, r[1])
	}
	if got := strings.Join(names, ","); got != "alpha,articles,manuals" {
		t.Errorf("sources listed %s, want alpha,articles,manuals: declared and seen in documents, by name\n%s", got, body)
	}
	for _, want := range []string{
		`<tr id="source-manuals"><td><a href="/runs?source=manuals">manuals</a></td><td>s3</td><td class="mode">live</td>`,
		`<td class="n">1.25s</td>`,
		`<tr id="source-articles"><td><a href="/runs?source=articles">articles</a></td><td>table</td><td class="mode">batch</td><td class="nowrap">–</td>`,
		`<tr id="source-alpha"><td><a href="/runs?source=alpha">alpha</a> <small>from its documents</small></td>`,
		`<small>operators only</small>`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the Sources page as viewer lacks %s\n%s", want, body)
		}
	}
	if strings.Contains(body, syncError) {
		t.Errorf("a viewer sees the sync's error")
	}
	if code, body = b.get(t, "/sources", operatorSecret); code != 200 || !strings.Contains(body, syncError) {
		t.Errorf("GET /sources as operator: %d, want the sync's error in:\n%s", code, body)
	}
}

// An operator reaches the Sources page from the navigation and goes on
// to a source's runs.
func TestBrowserSources(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.seedSources(t)
	ctx := browser(t)
	signIn(t, ctx, b.srv.URL, operatorSecret)
	run(t, ctx, "open the Sources page from the navigation",
		chromedp.Click(chromedp.CSS(`header nav a[href="/sources"]`)),
		waitFor(`document.querySelector('header nav a[aria-current="page"]')?.textContent === "Sources"`),
		waitFor(textIs("#source-manuals .mode", "live")),
		waitFor(`(document.querySelector("#source-articles")?.textContent || "").includes("password authentication failed")`),
	)
	run(t, ctx, "follow a source to its runs",
		chromedp.Click(chromedp.CSS(`#source-alpha a`)),
		waitFor(`location.pathname === "/runs" && location.search === "?source=alpha"`),
	)
}
