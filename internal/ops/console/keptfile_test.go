package console_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"html"
	"image"
	"image/png"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/sluicehq/sluice/internal/store/deadletter"
)

// keepScan makes dead letter id an ocr_low_confidence scan, alpha/scan.png,
// that keeps its file, and returns the file's bytes.
func (b *testBundle) keepScan(t *testing.T, id string) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := png.Encode(&buf, image.NewGray(image.Rect(0, 0, 8, 4))); err != nil {
		t.Fatal(err)
	}
	b.keepFile(t, id, "alpha/scan.png", buf.Bytes(), recognised)
	return buf.Bytes()
}

// recognised is what OCR read, below the bar, of the scans keepScan keeps.
const recognised = "Perm1t 44l1 appr0ved <b>by</b> the clerk"

// keepFile makes dead letter id an ocr_low_confidence file named native
// that keeps data and the text OCR recognised in it.
func (b *testBundle) keepFile(t *testing.T, id, native string, data []byte, recognised string) {
	t.Helper()
	ctx := context.Background()
	var docID string
	if err := b.db.Pool.QueryRow(ctx, `UPDATE dead_letters SET source_native_id = $2, error_class = 'ocr_low_confidence'
		WHERE dead_letter_id = $1 RETURNING doc_id`, id, native).Scan(&docID); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	if err := deadletter.KeepFile(ctx, b.db.Pool, deadletter.FileRef{DeadLetterID: id, DocID: docID, SHA256: hex.EncodeToString(sum[:]), Recognised: recognised}, data); err != nil {
		t.Fatal(err)
	}
}

// fetchFile gets dead letter id's kept file as an operator.
func (b *testBundle) fetchFile(t *testing.T, id string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, b.srv.URL+"/dead-letters/"+id+"/file", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+operatorSecret)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp, body
}

// A hostile file kept by a dead letter, an HTML page with a script named
// like an image, is never rendered: the file is served by its content,
// not its name, as a sandboxed download that the browser may not sniff,
// so the page's image of it shows nothing and its script never runs.
func TestHostileKeptFileIsADownload(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const id = "dl-alpha-003"
	hostile := []byte("<!DOCTYPE html><html><body><script>fetch('/replay',{method:'POST'})</script></body></html>")
	b.keepFile(t, id, "alpha/page.png", hostile, "")
	resp, got := b.fetchFile(t, id)
	h := resp.Header
	if resp.StatusCode != http.StatusOK || !bytes.Equal(got, hostile) || h.Get("Content-Type") != "application/octet-stream" ||
		h.Get("Content-Disposition") != "attachment" || !strings.HasPrefix(h.Get("Content-Security-Policy"), "sandbox") {
		t.Errorf("a kept HTML file: %d, headers %v; want its bytes as a sandboxed download", resp.StatusCode, h)
	}
}

// A dead letter that keeps its file shows an operator the file, inline
// when it is an image, with a link to it, to key its text in from the
// page the scanner saw. A viewer is told a file is kept, gets no link
// and is refused the file. A dead letter that keeps none answers 404,
// saying why.
func TestKeptFileIsShownToOperatorsOnly(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const id = "dl-alpha-001"
	scan := b.keepScan(t, id)

	code, body := b.get(t, "/dead-letters/"+id, operatorSecret)
	for _, want := range []string{`<img src="/dead-letters/` + id + `/file"`, `id="kept-file-link"`, "to key its text in from the page the scanner saw"} {
		if code != http.StatusOK || !strings.Contains(body, want) {
			t.Errorf("the dead letter's page as operator: %d, lacks %s\n%s", code, want, body)
		}
	}
	resp, got := b.fetchFile(t, id)
	h := resp.Header
	if resp.StatusCode != http.StatusOK || !bytes.Equal(got, scan) || h.Get("Content-Type") != "image/png" ||
		h.Get("X-Content-Type-Options") != "nosniff" || !strings.HasPrefix(h.Get("Content-Security-Policy"), "sandbox") {
		t.Errorf("the kept file as operator: %d, %d bytes (want %d), headers %v", resp.StatusCode, len(got), len(scan), h)
	}

	code, body = b.get(t, "/dead-letters/"+id, viewerSecret)
	if code != http.StatusOK || !strings.Contains(body, "operators may open it") || strings.Contains(body, id+"/file") {
		t.Errorf("the dead letter's page as viewer: %d; want the file said to be kept, with no link to it\n%s", code, body)
	}
	if code, _ = b.get(t, "/dead-letters/"+id+"/file", viewerSecret); code != http.StatusForbidden {
		t.Errorf("the kept file as viewer: %d, want 403", code)
	}
	if code, body = b.get(t, "/dead-letters/dl-alpha-002/file", operatorSecret); code != http.StatusNotFound || !strings.Contains(body, "keeps no file") {
		t.Errorf("a dead letter that keeps no file: %d, want 404 saying so\n%s", code, body)
	}
}

// In a browser, an operator sees the kept scan itself on its dead
// letter's page, under the console's content security policy.
func TestBrowserShowsAKeptScan(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.keepScan(t, "dl-alpha-001")
	ctx := browser(t)
	signIn(t, ctx, b.srv.URL, operatorSecret)
	run(t, ctx, "open the scan's dead letter",
		chromedp.Navigate(b.srv.URL+"/dead-letters/dl-alpha-001"),
		waitFor(`document.querySelector("#kept-file-image")?.complete === true && document.querySelector("#kept-file-image").naturalWidth === 8`),
		waitFor(`document.querySelector("#key-text")?.value === `+strconv.Quote(recognised)),
	)
}

// An operator keys a scan's text in beside its page: the page offers
// what OCR recognised, below the bar, to correct, and gives the
// corrected text back as a file to store with sluice dlq correct. A
// viewer sees neither the text nor the form, and is refused the file.
func TestScanTextIsKeyedBesideItsPage(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const id = "dl-alpha-001"
	b.keepScan(t, id)

	code, body := b.get(t, "/dead-letters/"+id, operatorSecret)
	for _, want := range []string{`id="key-form"`, html.EscapeString(recognised) + "</textarea>",
		"sluice dlq correct --id " + id + " --text FILE"} {
		if code != http.StatusOK || !strings.Contains(body, want) {
			t.Errorf("the scan's page as operator: %d, lacks %s\n%s", code, want, body)
		}
	}
	code, body = b.get(t, "/dead-letters/"+id, viewerSecret)
	if code != http.StatusOK || strings.Contains(body, "key-form") || strings.Contains(body, "44l1") {
		t.Errorf("the scan's page as viewer: %d; want neither the recognised text nor the form\n%s", code, body)
	}

	keyed := url.Values{"text": {"Permit 4411 approved by the clerk.\r\nSigned."}}
	req, err := http.NewRequest(http.MethodPost, b.srv.URL+"/dead-letters/"+id+"/keyed-text", strings.NewReader(keyed.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Authorization", "Bearer "+operatorSecret)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	h := resp.Header
	if resp.StatusCode != http.StatusOK || string(got) != "Permit 4411 approved by the clerk.\nSigned." ||
		h.Get("Content-Disposition") != `attachment; filename="keyed-`+id+`.txt"` || h.Get("X-Content-Type-Options") != "nosniff" {
		t.Errorf("the keyed text: %d %q, headers %v; want it back with LF line ends, as a download", resp.StatusCode, got, h)
	}
	if code, _ := b.post(t, "/dead-letters/"+id+"/keyed-text", viewerSecret, keyed); code != http.StatusForbidden {
		t.Errorf("the keyed text as viewer: %d, want 403", code)
	}
	if code, _ := b.post(t, "/dead-letters/"+id+"/keyed-text", operatorSecret, url.Values{"text": {" "}}); code != http.StatusBadRequest {
		t.Errorf("empty keyed text: %d, want 400", code)
	}
}
