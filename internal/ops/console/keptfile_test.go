package console_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"image"
	"image/png"
	"io"
	"net/http"
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
	ctx := context.Background()
	var docID string
	if err := b.db.Pool.QueryRow(ctx, `UPDATE dead_letters SET source_native_id = 'alpha/scan.png', error_class = 'ocr_low_confidence'
		WHERE dead_letter_id = $1 RETURNING doc_id`, id).Scan(&docID); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(buf.Bytes())
	if err := deadletter.KeepFile(ctx, b.db.Pool, deadletter.FileRef{DeadLetterID: id, DocID: docID, SHA256: hex.EncodeToString(sum[:])}, buf.Bytes()); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
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
	req, err := http.NewRequest(http.MethodGet, b.srv.URL+"/dead-letters/"+id+"/file", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+operatorSecret)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
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
	)
}
