package corpus

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/content/extract"
	"github.com/sluicehq/sluice/internal/content/extract/scantest"
	"github.com/sluicehq/sluice/pkg/classify"
)

// A chunk's pages are those whose text it overlaps; the blank lines
// between pages and unlocated sections belong to none.
func TestPagesOf(t *testing.T) {
	t.Parallel()
	text, pages := joinSections([]extract.Section{
		{Text: "intro"}, // 0:5, no page
		{Text: "one", Location: extract.Location{Page: 1}},   // 7:10
		{Text: "", Location: extract.Location{Page: 2}},      // skipped
		{Text: "three", Location: extract.Location{Page: 3}}, // 12:17
		{Text: "four", Location: extract.Location{Page: 4}},  // 19:23
	})
	if text != "intro\n\none\n\nthree\n\nfour" {
		t.Fatalf("text %q", text)
	}
	d := Document{Text: text, Pages: pages}
	for _, c := range []struct {
		start, end, first, last int
	}{
		{0, 5, 0, 0},
		{0, 8, 1, 1},
		{7, 10, 1, 1},
		{10, 12, 0, 0},
		{8, 13, 1, 3},
		{12, 17, 3, 3},
		{16, 23, 3, 4},
		{0, len(text), 1, 4},
		{23, 23, 0, 0},
	} {
		if first, last := d.PagesOf(c.start, c.end); first != c.first || last != c.last {
			t.Errorf("PagesOf(%d, %d) of %q = %d, %d; want %d, %d", c.start, c.end, text[c.start:c.end], first, last, c.first, c.last)
		}
	}
	if first, last := (Document{Text: text}).PagesOf(0, len(text)); first != 0 || last != 0 {
		t.Errorf("a document without pages has pages %d-%d", first, last)
	}
}

// The LimitedExtractor reads a real PDF page by page, and its text says
// which page each part came from; a PDF it cannot read is the file's
// failure, classified; limits that mean nothing are refused up front.
func TestLimitedExtractorReadsPDFPages(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	for _, name := range []string{"pages.pdf", "encrypted.pdf"} {
		b, err := os.ReadFile(filepath.Join("..", "extract", "testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	a := account(t, root, Config{Extractor: LimitedExtractor{}})
	d := a.docs["pages.pdf"]
	if d.Status != StatusOK || len(d.Pages) != 3 {
		t.Fatalf("pages.pdf: status %s, pages %+v, err %v", d.Status, d.Pages, d.Err)
	}
	at := strings.Index(d.Text, "page 2 of the sample report")
	if first, last := d.PagesOf(at, at+10); at < 0 || first != 2 || last != 2 {
		t.Errorf("page 2's phrase at %d is on pages %d-%d", at, first, last)
	}
	enc := a.docs["encrypted.pdf"]
	if enc.Status != StatusInvalid || classify.Classify(enc.Err).Class != classify.ClassEncrypted {
		t.Errorf("encrypted.pdf: status %s, err %v", enc.Status, enc.Err)
	}
	bad := Config{Inputs: []string{root}, Extractor: LimitedExtractor{Limits: extract.Limits{Timeout: -1}}}
	if err := bad.Validate(); err == nil {
		t.Error("a negative extraction timeout is accepted")
	}
}

// A missing extraction tool stops no walk and drops no file: the file
// that needs it is parked as extract_tool_missing, naming what to
// install, and the walk reads the rest.
func TestMissingToolParksTheFile(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	writeTree(t, root, map[string]string{"a.pdf": "%PDF-1.4\n%\xe2\xe3\xcf\xd3\n", "b.txt": "plain text, read without any tool"})
	r, err := NewReader(Config{Inputs: []string{root}, Extractor: extractorFunc(func(string) (string, error) {
		return "", fmt.Errorf("%w: tesseract: install tesseract-ocr (make extract-tools)", extract.ErrToolMissing)
	})})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]Document{}
	if err := r.Walk(context.Background(), func(d Document) error { got[filepath.Base(d.NativeID)] = d; return nil }); err != nil {
		t.Fatalf("a missing tool stopped the walk: %v", err)
	}
	if d := got["b.txt"]; d.Status != StatusOK {
		t.Errorf("b.txt: status %s (%v), want read", d.Status, d.Err)
	}
	pdf, ok := got["a.pdf"]
	if !ok {
		t.Fatal("a.pdf was dropped")
	}
	if c := classify.Classify(pdf.Err); pdf.Status != StatusInvalid || c.Class != classify.ClassToolMissing || c.Disposition != classify.Quarantine {
		t.Errorf("a.pdf: status %s, class %+v, want invalid, quarantined as %s", pdf.Status, c, classify.ClassToolMissing)
	}
	if pdf.Err == nil || !strings.Contains(pdf.Err.Error(), "install tesseract-ocr") {
		t.Errorf("a.pdf's error does not say what to install: %v", pdf.Err)
	}
}

// A chunk of a paged document carries its page or pages; a chunk of any
// other document shares the document's metadata as it is.
func TestChunkMetadata(t *testing.T) {
	t.Parallel()
	text, pages := joinSections([]extract.Section{
		{Text: "one", Location: extract.Location{Page: 1}},
		{Text: "two", Location: extract.Location{Page: 2}},
	})
	d := Document{NativeID: "a.pdf", Text: text, Status: StatusOK, Pages: pages, Metadata: map[string]any{"path": "a.pdf", "format": "pdf"}}
	meta, _, err := Admit(d)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		start, end int
		want       string
	}{
		{0, 3, `{"format":"pdf","page":1,"path":"a.pdf"}`},
		{0, len(text), `{"format":"pdf","pages":[1,2],"path":"a.pdf"}`},
		{3, 5, `{"format":"pdf","path":"a.pdf"}`},
	} {
		got, err := d.ChunkMetadata(meta, c.start, c.end)
		if err != nil || string(got) != c.want {
			t.Errorf("ChunkMetadata(%d, %d) = %s (%v), want %s", c.start, c.end, got, err, c.want)
		}
	}
	plain := Document{Text: text, Metadata: d.Metadata}
	if got, _ := plain.ChunkMetadata(meta, 0, 3); string(got) != string(meta) {
		t.Errorf("a document without pages: %s, want %s", got, meta)
	}
}

// A scan's chunks carry their page and its OCR confidence, and the
// document its OCR'd pages and word-weighted confidence; below the
// source's bar the scan is parked as ocr_low_confidence with its page's
// score in the error, and an accepted one is marked so in its metadata.
func TestScanChunksCarryTheirPageConfidence(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	page := scantest.RenderPage(t, scantest.PagesPDF(), 2)
	scantest.WriteFile(t, root, "scan.pdf", scantest.ImagePDF(t, page, scantest.Blurred(page, 6)))
	read := func(o extract.OCR) Document {
		t.Helper()
		return account(t, root, Config{Extractor: LimitedExtractor{OCR: o}}).docs["scan.pdf"]
	}
	d := read(extract.OCR{MinConfidence: 0.5})
	if d.Status != StatusOK || len(d.Pages) != 2 || !d.Pages[0].OCR || d.Metadata["ocr_pages"] != 2 {
		t.Fatalf("scan.pdf: status %s, pages %+v, metadata %v, err %v", d.Status, d.Pages, d.Metadata, d.Err)
	}
	at := strings.Index(d.Text, scantest.Sentence2)
	meta, err := d.ChunkMetadata(nil, at, at+len(scantest.Sentence2))
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf(`"ocr_confidence":{"1":%v}`, roundConfidence(d.Pages[0].Confidence))
	if at < 0 || !strings.Contains(string(meta), `"page":1`) || !strings.Contains(string(meta), want) {
		t.Errorf("chunk metadata %s, want page 1 and %s", meta, want)
	}
	low := read(extract.OCR{Scope: extract.ScopePage})
	c := classify.Classify(low.Err)
	if low.Status != StatusInvalid || c.Class != classify.ClassOCRLowConfidence || !strings.Contains(low.Err.Error(), "pages 2 (0.") || len(low.OCR) != 2 {
		t.Errorf("below the bar by page: status %s, class %s, OCR %+v, err %v", low.Status, c.Class, low.OCR, low.Err)
	}
	if !strings.Contains(low.Recognised, scantest.Sentence2) || !strings.Contains(low.Recognised, "\n\n") {
		t.Errorf("below the bar, recognised %q: want both pages' text, joined as a read document's", low.Recognised)
	}
	if acc := read(extract.OCR{Scope: extract.ScopePage, Accept: true}); acc.Status != StatusOK || acc.Metadata["ocr_accepted"] != true {
		t.Errorf("accepted: status %s, metadata %v, err %v", acc.Status, acc.Metadata, acc.Err)
	}
}
