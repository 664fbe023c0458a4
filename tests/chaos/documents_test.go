package chaos_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/sluicehq/sluice/internal/content/extract/scantest"
)

// writeDocuments adds files of document formats to the corpus in dir, so
// that producers killed under load are killed while they extract: a text
// PDF of three pages and a DOCX, and every third corpus (i) a scanned
// page that OCR reads. Their names start with the corpus's, as the text
// documents' do, so that each is a document of its own in its source. It
// returns how many files it wrote.
func (f *fleet) writeDocuments(dir string, i int) int {
	f.t.Helper()
	testdata := filepath.Dir(scantest.PagesPDF())
	n := 0
	for name, from := range map[string]string{"report.pdf": "pages.pdf", "notes.docx": "sample.docx"} {
		copyFile(f.t, filepath.Join(testdata, from), filepath.Join(dir, fmt.Sprintf("c%03d-%s", i, name)))
		n++
	}
	if i%3 == 2 {
		pdf := scantest.PagesPDF()
		scan := scantest.StackPages(scantest.RenderPage(f.t, pdf, 1), scantest.RenderPage(f.t, pdf, 2))
		scantest.WriteFile(f.t, dir, fmt.Sprintf("c%03d-scan.png", i), scantest.PNG(f.t, scan))
		n++
	}
	return n
}

func copyFile(t testing.TB, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
}
