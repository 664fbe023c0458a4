package console_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/sluicehq/sluice/internal/platform/broker"
)

// chromiumPath is where Debian's chromium package puts the browser;
// `make chromium` installs it.
const chromiumPath = "/usr/bin/chromium"

// screenshotDir receives the screenshots the README shows.
const screenshotDir = "../../../docs/console"

// browser starts a headless Chromium with a fresh profile and returns a
// context driving one tab, cancelled with the test.
func browser(t *testing.T) context.Context {
	t.Helper()
	if _, err := os.Stat(chromiumPath); err != nil {
		t.Fatalf("no browser at %s: run `make chromium` (apt-get install chromium): %v", chromiumPath, err)
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromiumPath),
		chromedp.Flag("headless", true), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true), chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.Flag("hide-scrollbars", true),
		chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1280, 1000),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(actx)
	ctx, cancelTimeout := context.WithTimeout(ctx, 5*time.Minute)
	t.Cleanup(func() { cancelTimeout(); cancelTab(); cancelAlloc() })
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return ctx
}

// run runs browser actions, failing the test with what was being done.
func run(t *testing.T, ctx context.Context, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, actions...); err != nil {
		loc, _ := chromedp.Run(ctx, chromedp.Location())
		html, _ := chromedp.Run(ctx, chromedp.OuterHTML(chromedp.CSS("main")))
		t.Fatalf("%s (at %s): %v\n%s", what, loc, err, html)
	}
}

// get runs one action that returns a value.
func get[T any](t *testing.T, ctx context.Context, what string, a chromedp.Action[T]) T {
	t.Helper()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return v
}

// waitFor polls a JavaScript condition in the page until it holds or 30
// seconds pass. A navigation ends a poll early (the page it watched is
// gone), so the poll starts again on the new page until the deadline.
func waitFor(cond string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		deadline := time.Now().Add(30 * time.Second)
		for {
			left := time.Until(deadline)
			_, err := chromedp.Poll[bool](cond, chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(left))(ctx, tg)
			if err == nil || ctx.Err() != nil || time.Now().After(deadline) {
				if err != nil {
					return fmt.Errorf("waiting for %s: %w", cond, err)
				}
				return nil
			}
		}
	})
}

// textIs is a condition: the element's trimmed text equals want.
func textIs(sel, want string) string {
	return fmt.Sprintf(`(document.querySelector(%q)?.textContent || "").trim() === %q`, sel, want)
}

func signIn(t *testing.T, ctx context.Context, base, secret string) {
	t.Helper()
	run(t, ctx, "sign in",
		chromedp.Navigate(base+"/login"),
		chromedp.WaitVisible(chromedp.CSS("#token")),
		chromedp.SendKeys(chromedp.CSS("#token"), secret),
		chromedp.Submit(chromedp.CSS("#token")),
		waitFor(`!!document.querySelector("#shape") && document.readyState === "complete"`),
		// A page script sees the new document before chromedp's own node
		// tree does; a Click right after would query the old tree and fail
		// with "Could not find node with given id". Waiting through
		// chromedp's tree moves it to the signed-in page.
		chromedp.WaitVisible(chromedp.CSS("#shape")),
	)
}

// screenshot saves the whole page, or only the viewport for a long one.
func screenshot(t *testing.T, ctx context.Context, name string, full bool) {
	t.Helper()
	shot := chromedp.CaptureScreenshot()
	if full {
		shot = chromedp.FullScreenshot(100)
	}
	png := get(t, ctx, "screenshot "+name, shot)
	if err := os.MkdirAll(screenshotDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(screenshotDir, name), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestBrowserTriage(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := browser(t)
	base := b.srv.URL
	signIn(t, ctx, base, operatorSecret)
	run(t, ctx, "overview",
		waitFor(`document.querySelector("#shape").textContent.includes("spike in one source")`),
		waitFor(textIs("#ready", fmt.Sprint(alphaReady))),
		waitFor(`document.querySelectorAll("svg.chart rect").length > 3`),
		// The active generation's progress bar, inside the live fragment
		// whose cards the layout check below measures.
		waitFor(`!!document.querySelector("#live #generation-1 progress")`),
		// Live refresh replaces the fragment without a reload.
		waitFor(`!!document.querySelector("#live").getAttribute("data-updated")`),
	)
	// At 1280 px every card shows all its columns: none is clipped or
	// scrolled, and the by-source card's last header (Worst) lies inside it.
	run(t, ctx, "every overview column visible at 1280 px",
		waitFor(`window.innerWidth === 1280 && [...document.querySelectorAll("#live .card")].every(c => c.scrollWidth <= c.clientWidth)`),
		waitFor(`(() => {
			const card = document.querySelector("#by-source").getBoundingClientRect();
			const th = [...document.querySelectorAll("#by-source th")].pop();
			const r = th.getBoundingClientRect();
			return th.textContent.trim() === "Worst" && r.right <= card.right && r.right <= window.innerWidth;
		})()`),
	)
	screenshot(t, ctx, "overview.png", true)

	// Filter with the form; the filter lives in the URL and survives a reload.
	var loc, source string
	run(t, ctx, "filter by source",
		chromedp.Navigate(base+"/dead-letters"),
		waitFor(textIs("#matched", "151")),
		chromedp.SetValue(chromedp.CSS("#f-source"), "beta"),
		chromedp.Click(chromedp.CSS("#apply")),
		waitFor(textIs("#matched", "31")),
		chromedp.Reload(),
		waitFor(textIs("#matched", "31")),
	)
	loc = get(t, ctx, "location", chromedp.Location())
	source = get(t, ctx, "source select", chromedp.Value(chromedp.CSS("#f-source")))
	if !strings.Contains(loc, "source=beta") || source != "beta" {
		t.Errorf("after reload: URL %s, source select %q; want the filter kept", loc, source)
	}
	run(t, ctx, "search error detail",
		chromedp.SetValue(chromedp.CSS("#f-q"), "unsupported token"),
		chromedp.Click(chromedp.CSS("#apply")),
		waitFor(textIs("#matched", fmt.Sprint(betaBad/2))),
	)
	run(t, ctx, "search payload text",
		chromedp.Navigate(base+"/dead-letters"),
		waitFor(`!!document.querySelector("#f-ptext")`),
		chromedp.SetValue(chromedp.CSS("#f-ptext"), needle),
		chromedp.Click(chromedp.CSS("#apply")),
		waitFor(textIs("#matched", "1")),
	)
	run(t, ctx, "list for the screenshot", chromedp.Navigate(base+"/dead-letters?sort=attempts"), waitFor(textIs("#matched", "151")))
	screenshot(t, ctx, "list.png", false)

	// Open a dead letter from the list and reveal its text.
	run(t, ctx, "open a dead letter and reveal its text",
		chromedp.Navigate(base+"/dead-letters?ptext="+needle),
		waitFor(textIs("#matched", "1")),
		chromedp.Click(chromedp.CSS("table.list tbody a")),
		waitFor(`!!document.querySelector("#reveal")`),
		waitFor(`document.querySelectorAll("#history tr").length >= 1`),
		chromedp.Click(chromedp.CSS("#reveal")),
		waitFor(`!!document.querySelector("#chunk-text")`),
	)
	// The text is read by the page's own script: a node handle could go
	// stale if the live refresh redraws the page in between.
	run(t, ctx, "revealed text", waitFor(fmt.Sprintf(`(document.querySelector("#chunk-text") || {textContent: ""}).textContent.includes(%q)`, needle)))
	screenshot(t, ctx, "dead-letter.png", true)
	run(t, ctx, "an escalation stays redacted",
		chromedp.Navigate(base+"/dead-letters/"+b.escID+"?text=1"),
		waitFor(`!!document.querySelector("#redacted") && !document.querySelector("#chunk-text") && !document.querySelector("#reveal")`),
	)

	t.Run("viewer", func(t *testing.T) {
		vctx := browser(t)
		signIn(t, vctx, base, viewerSecret)
		run(t, vctx, "viewer sees no text",
			chromedp.Navigate(base+"/dead-letters/"+b.alphaID),
			waitFor(`!!document.querySelector("#text-hidden") && !document.querySelector("#reveal") && !document.querySelector("#chunk-text")`),
			chromedp.Navigate(base+"/dead-letters/"+b.alphaID+"?text=1"),
			waitFor(`document.title.startsWith("Forbidden") && !document.querySelector("#chunk-text")`),
			chromedp.Navigate(base+"/dead-letters?source=alpha"),
			waitFor(`!!document.querySelector("#matched") && !document.querySelector("#replay-filter") && !document.querySelector("#f-ptext")`),
		)
	})

	b.replayThroughThePage(t, ctx)
	b.pauseAndResume(t, ctx)
	b.assertNoSecret(t)
}

// replayThroughThePage replays a filter that spans three list pages:
// dry-run counts, then a reason, then dispatch.
func (b *testBundle) replayThroughThePage(t *testing.T, ctx context.Context) {
	t.Helper()
	var selected, stored, dispatched string
	run(t, ctx, "dry run of the whole filter",
		chromedp.Navigate(b.srv.URL+"/dead-letters?source=alpha&class=transient_exhausted"),
		waitFor(textIs("#matched", fmt.Sprint(alphaReady))),
		waitFor(`!!document.querySelector("#next")`), // more than one page
		chromedp.Click(chromedp.CSS("#replay-filter")),
		waitFor(`!!document.querySelector("#dry-selected")`),
	)
	selected = get(t, ctx, "selected", chromedp.TextContent(chromedp.CSS("#dry-selected")))
	stored = get(t, ctx, "stored", chromedp.TextContent(chromedp.CSS("#dry-stored")))
	if selected != fmt.Sprint(alphaReady) || stored != fmt.Sprint(alphaStored) {
		t.Fatalf("dry run: %s selected, %s with a vector; want %d and %d", selected, stored, alphaReady, alphaStored)
	}
	if n := b.count(t, `SELECT count(*) FROM dead_letters WHERE replay_id IS NOT NULL`); n != 0 {
		t.Fatalf("the dry run marked %d dead letters", n)
	}
	if n := b.count(t, `SELECT count(*) FROM replay_audit WHERE action = 'dry_run' AND requested_by = $1 AND selected = $2`, operatorName, alphaReady); n != 1 {
		t.Errorf("%d dry-run audit rows by %s; want 1", n, operatorName)
	}
	run(t, ctx, "reason", chromedp.SendKeys(chromedp.CSS("#reason"), "embedder fixed its 503s"))
	screenshot(t, ctx, "replay-dialog.png", true)
	run(t, ctx, "dispatch",
		chromedp.Click(chromedp.CSS("#confirm-replay")),
		waitFor(`!!document.querySelector("#dispatched")`),
	)
	dispatched = get(t, ctx, "dispatched", chromedp.TextContent(chromedp.CSS("#dispatched")))
	if dispatched != fmt.Sprint(alphaReady) {
		t.Errorf("dispatched %s; want %d", dispatched, alphaReady)
	}
	if n := b.count(t, `SELECT count(*) FROM dead_letters WHERE source_id = 'alpha' AND replay_id IS NOT NULL AND replayed_at IS NOT NULL`); n != alphaReady {
		t.Errorf("%d alpha dead letters marked; want %d", n, alphaReady)
	}
	if n := b.count(t, `SELECT count(*) FROM replay_audit WHERE action = 'replay' AND requested_by = $1 AND reason = 'embedder fixed its 503s'
		AND selected = $2 AND dispatched = $2 AND already_stored = $3 AND scope->>'source' = 'alpha'`, operatorName, alphaReady, alphaStored); n != 1 {
		t.Errorf("%d matching audit rows; want 1 with principal, reason, scope and counts", n)
	}
	if n := b.count(t, `SELECT count(*) FROM dead_letter_history WHERE event = 'replayed'`); n != alphaReady {
		t.Errorf("%d replayed history rows; want %d", n, alphaReady)
	}
	stream, err := b.js.Stream(ctx, broker.IngestStream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := stream.Info(ctx, jetstream.WithSubjectFilter("ingest.replay.>"))
	if err != nil {
		t.Fatal(err)
	}
	if got := info.State.Subjects["ingest.replay.alpha"]; got != alphaReady || len(info.State.Subjects) != 1 {
		t.Errorf("JetStream holds %v on ingest.replay.>; want %d on ingest.replay.alpha only", info.State.Subjects, alphaReady)
	}
	run(t, ctx, "audit page lists it",
		chromedp.Navigate(b.srv.URL+"/audit"),
		waitFor(`document.querySelector("#audit").textContent.includes("`+operatorName+`")`),
	)
}

// pauseAndResume pauses and resumes the replay durable from the overview.
func (b *testBundle) pauseAndResume(t *testing.T, ctx context.Context) {
	t.Helper()
	consumer := func() *jetstream.ConsumerInfo {
		c, err := b.js.Consumer(ctx, broker.IngestStream, broker.ReplayConsumer)
		if err != nil {
			t.Fatal(err)
		}
		info, err := c.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return info
	}
	run(t, ctx, "pause",
		chromedp.Navigate(b.srv.URL+"/"),
		waitFor(`!!document.querySelector("#pause-reason")`),
		chromedp.SendKeys(chromedp.CSS("#pause-reason"), "provider is shaky"),
		chromedp.Click(chromedp.CSS("#pause")),
		waitFor(`(document.querySelector(".flash")?.textContent || "").includes("paused")`),
		waitFor(`(document.querySelector("#durable-state")?.textContent || "").includes("paused until")`),
	)
	if info := consumer(); !info.Paused || info.Config.PauseUntil == nil || !info.Config.PauseUntil.After(time.Now().AddDate(1, 0, 0)) {
		t.Errorf("after pause: paused %v, PauseUntil %v; want paused until resumed", info.Paused, info.Config.PauseUntil)
	}
	run(t, ctx, "resume",
		chromedp.SendKeys(chromedp.CSS("#resume-reason"), "provider recovered"),
		chromedp.Click(chromedp.CSS("#resume")),
		waitFor(`(document.querySelector(".flash")?.textContent || "").includes("resumed")`),
		waitFor(textIs("#durable-state", "running")),
	)
	if info := consumer(); info.Paused {
		t.Errorf("after resume: still paused until %v", info.Config.PauseUntil)
	}
	if n := b.count(t, `SELECT count(*) FROM replay_audit WHERE action IN ('pause', 'resume') AND requested_by = $1`, operatorName); n != 2 {
		t.Errorf("%d pause/resume audit rows; want 2", n)
	}
}
