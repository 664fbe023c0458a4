package extract_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/content/extract"
	"github.com/sluicehq/sluice/internal/content/extract/hostiletest"
	"github.com/sluicehq/sluice/pkg/classify"
)

func TestZipBombStopsAtMaxUncompressed(t *testing.T) {
	t.Parallel()
	// 10 GiB from about 10 MB; inflating must stop at the limit, long
	// before the whole is read, whatever the header claims.
	bomb := hostiletest.ZipBomb(t, 10, 10<<30)
	t.Logf("%d-byte zip inflating to 10 GiB", len(bomb))
	if d := extract.Detect("bomb.docx", bomb); d.Format != extract.FormatDOCX {
		t.Fatalf("Detect = %+v", d)
	}
	start := time.Now()
	_, err := extract.Extract(context.Background(), extract.Source{Name: "bomb.docx", Data: bomb}, extract.FormatDOCX, extract.Limits{MaxUncompressed: 8 << 20})
	wantClass(t, err, classify.ClassExtractMemory)
	if elapsed := time.Since(start); elapsed > 5*time.Second {
		t.Errorf("took %v: the inflation did not stop at the limit", elapsed)
	}
}

// TestZipBombWithALyingHeader: a header that claims less than the entry
// inflates to is caught at the claimed size: the entry is corrupt.
func TestZipBombWithALyingHeader(t *testing.T) {
	t.Parallel()
	bomb := hostiletest.ZipBomb(t, 1, 1024)
	_, err := extract.Extract(context.Background(), extract.Source{Data: bomb}, extract.FormatDOCX, extract.Limits{MaxUncompressed: 8 << 20})
	wantClass(t, err, classify.ClassCorrupt)
}

func TestZipWithTooManyEntriesIsTooLarge(t *testing.T) {
	t.Parallel()
	entries := []string{"mimetype", "application/vnd.oasis.opendocument.text"}
	for i := range 50 {
		entries = append(entries, fmt.Sprintf("junk/%d", i), "")
	}
	data := zipOf(t, entries...)
	_, err := extract.Extract(context.Background(), extract.Source{Data: data}, extract.FormatODT, extract.Limits{MaxEntries: 20})
	wantClass(t, err, classify.ClassTooLarge)
}

// TestBillionLaughsDoesNotExpand proves that a declared entity is never
// expanded: the document is rejected as corrupt at the first reference,
// having produced nothing.
func TestBillionLaughsDoesNotExpand(t *testing.T) {
	t.Parallel()
	data := hostiletest.BillionLaughs(t)
	_, err := extract.Extract(context.Background(), extract.Source{Data: data}, extract.FormatDOCX, extract.Limits{})
	e := wantClass(t, err, classify.ClassCorrupt)
	if !strings.Contains(e.Error(), "lol9") {
		t.Errorf("err = %v, want it to name the undeclared entity", e)
	}
}

// TestHugeAttributeIsBounded: an attribute as large as the inflate budget
// allows stops at the budget instead of being buffered whole.
func TestHugeAttributeIsBounded(t *testing.T) {
	t.Parallel()
	doc := `<w:document xmlns:w="w"><w:body w:x="` + strings.Repeat("A", 4<<20) + `"><w:p><w:r><w:t>x</w:t></w:r></w:p></w:body></w:document>`
	data := zipOf(t, "[Content_Types].xml", contentTypes, "word/document.xml", doc)
	_, err := extract.Extract(context.Background(), extract.Source{Data: data}, extract.FormatDOCX, extract.Limits{MaxUncompressed: 1 << 20})
	wantClass(t, err, classify.ClassExtractMemory)
}

func TestGzipBombStopsAtMaxUncompressed(t *testing.T) {
	t.Parallel()
	data := gzipOf(t, strings.Repeat("a", 64<<20))
	_, err := extract.Extract(context.Background(), extract.Source{Name: "a.txt.gz", Data: data}, extract.FormatGzip, extract.Limits{MaxUncompressed: 1 << 20})
	wantClass(t, err, classify.ClassExtractMemory)
}

func TestPDFPageCountOverLimitIsTooLarge(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "huge.pdf")
	if err := os.WriteFile(path, hostiletest.ManyPagesPDF(100_000), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := extract.Extract(context.Background(), extract.Source{Path: path}, extract.FormatPDF, extract.Limits{})
	e := wantClass(t, err, classify.ClassTooLarge)
	if !strings.Contains(e.Detail, "100000 pages") {
		t.Errorf("detail = %q, want the page count", e.Detail)
	}
}

// TestPDFTimeoutKillsTheTool runs the real pdftotext on a real PDF of
// 3,000 text pages (testdata/pages.pdf repeated by qpdf) with a timeout
// far shorter than the extraction takes.
func TestPDFTimeoutKillsTheTool(t *testing.T) {
	t.Parallel()
	big := filepath.Join(t.TempDir(), "big.pdf")
	hostiletest.LongPDF(t, big, 1000)
	start := time.Now()
	_, err := extract.Extract(context.Background(), extract.Source{Path: big}, extract.FormatPDF, extract.Limits{Timeout: 100 * time.Millisecond})
	wantClass(t, err, classify.ClassExtractTimeout)
	if elapsed := time.Since(start); elapsed > 5*time.Second {
		t.Errorf("took %v after a 100ms timeout: the tool was not killed", elapsed)
	}
	// The same file within the default limits is read whole, so the
	// timeout, not the file, made the failure.
	doc, err := extract.Extract(context.Background(), extract.Source{Path: big}, extract.FormatPDF, extract.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(doc.Sections); n != 3000 {
		t.Fatalf("%d sections, want 3000", n)
	}
}

func TestPDFToolOutOfMemory(t *testing.T) {
	t.Parallel()
	_, err := extractFile(t, "pages.pdf", extract.Source{}, extract.Limits{MaxMemory: 4 << 20})
	wantClass(t, err, classify.ClassExtractMemory)
}

func TestUnsupportedFormat(t *testing.T) {
	t.Parallel()
	ole := []byte("\xD0\xCF\x11\xE0\xA1\xB1\x1A\xE1\x00\x00")
	d := extract.Detect("old.doc", ole)
	_, err := extract.Extract(context.Background(), extract.Source{Data: ole}, d.Format, extract.Limits{})
	wantClass(t, err, classify.ClassUnsupportedFormat)
}

func TestFileOverMaxBytesIsTooLarge(t *testing.T) {
	t.Parallel()
	_, err := extractFile(t, "sample.docx", extract.Source{}, extract.Limits{MaxBytes: 1000})
	wantClass(t, err, classify.ClassTooLarge)
}

func TestCanceledContextIsNotAFileFailure(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := extract.Extract(ctx, extract.Source{Path: filepath.Join("testdata", "pages.pdf")}, extract.FormatPDF, extract.Limits{})
	if got := classify.Classify(err); got.Class != classify.ClassCanceled {
		t.Fatalf("Classify(%v) = %+v, want canceled", err, got)
	}
}
