package extract_test

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/content/extract"
	"github.com/sluicehq/sluice/pkg/classify"
)

// zipBomb returns a DOCX whose document.xml inflates to gib GiB of zeros
// from about a megabyte per GiB, its header claiming claim bytes. The deflate
// stream repeats one block that writes 1 MiB of zeros from a window of
// zeros, so it is built without compressing the whole.
func zipBomb(t *testing.T, gib int, claim uint64) []byte {
	t.Helper()
	var stream bytes.Buffer
	fw, err := flate.NewWriter(&stream, flate.BestCompression)
	if err != nil {
		t.Fatal(err)
	}
	zeros := make([]byte, 1<<20)
	mustWrite := func() {
		if _, err := fw.Write(zeros); err != nil {
			t.Fatal(err)
		}
		if err := fw.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	mustWrite()
	first := stream.Len()
	mustWrite()
	block := bytes.Clone(stream.Bytes()[first:])
	for range gib<<10 - 2 {
		stream.Write(block)
	}
	if err := fw.Close(); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	if _, err := zw.Create("[Content_Types].xml"); err != nil {
		t.Fatal(err)
	}
	w, err := zw.CreateRaw(&zip.FileHeader{Name: "word/document.xml", Method: zip.Deflate, CompressedSize64: uint64(stream.Len()), UncompressedSize64: claim})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(stream.Bytes()); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestZipBombStopsAtMaxUncompressed(t *testing.T) {
	t.Parallel()
	// 10 GiB from about 10 MB; inflating must stop at the limit, long
	// before the whole is read, whatever the header claims.
	bomb := zipBomb(t, 10, 10<<30)
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
	bomb := zipBomb(t, 1, 1024)
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
	var dtd strings.Builder
	dtd.WriteString(`<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol">`)
	for i := 1; i <= 9; i++ {
		fmt.Fprintf(&dtd, `<!ENTITY lol%d "%s">`, i, strings.Repeat(fmt.Sprintf("&lol%d;", i-1), 10))
	}
	dtd.WriteString(`]>`)
	doc := dtd.String() + `<w:document xmlns:w="w"><w:body><w:p><w:r><w:t>&lol9;</w:t></w:r></w:p></w:body></w:document>`
	data := zipOf(t, "[Content_Types].xml", contentTypes, "word/document.xml", strings.ReplaceAll(doc, "lol1\"", "lol1\""))
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

// hugePDF writes a valid PDF of n empty pages, every page object real.
func hugePDF(t *testing.T, n int) string {
	t.Helper()
	var out bytes.Buffer
	var offsets []int
	obj := func(body string) {
		offsets = append(offsets, out.Len())
		fmt.Fprintf(&out, "%d 0 obj\n%s\nendobj\n", len(offsets), body)
	}
	out.WriteString("%PDF-1.4\n")
	obj("<< /Type /Catalog /Pages 2 0 R >>")
	var kids strings.Builder
	for i := range n {
		fmt.Fprintf(&kids, "%d 0 R ", i+3)
	}
	obj(fmt.Sprintf("<< /Type /Pages /Kids [%s] /Count %d >>", kids.String(), n))
	for range n {
		obj("<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] >>")
	}
	xref := out.Len()
	fmt.Fprintf(&out, "xref\n0 %d\n0000000000 65535 f \n", len(offsets)+1)
	for _, o := range offsets {
		fmt.Fprintf(&out, "%010d 00000 n \n", o)
	}
	fmt.Fprintf(&out, "trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n", len(offsets)+1, xref)
	path := filepath.Join(t.TempDir(), "huge.pdf")
	if err := os.WriteFile(path, out.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestPDFPageCountOverLimitIsTooLarge(t *testing.T) {
	t.Parallel()
	path := hugePDF(t, 100_000)
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
	args := []string{"--empty", "--pages"}
	for range 1000 {
		args = append(args, filepath.Join("testdata", "pages.pdf"))
	}
	args = append(args, "--", big)
	if out, err := exec.Command("qpdf", args...).CombinedOutput(); err != nil {
		t.Fatalf("qpdf: %v: %s", err, out)
	}
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
