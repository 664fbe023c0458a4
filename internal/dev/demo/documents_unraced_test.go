//go:build !race

package demo

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/content/extract"
	"github.com/sluicehq/sluice/pkg/classify"
)

// Built without the race detector: the bomb inflates to the default
// limit, hundreds of MiB, in one goroutine, which the detector slows
// tenfold with nothing to find; extraction's concurrency is raced in
// extract's and corpus's own tests.

// The corpus's document files extract, within the producer's default
// limits, as Poison expects: the PDFs with page 1's sentence and the
// DOCX read, the locked PDF encrypted, and the bomb, under a megabyte on
// disk, refused as extract_memory.
func TestDocumentFilesExtractAsPoisonExpects(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if _, err := WriteCorpus(dir, 6, 1); err != nil {
		t.Fatal(err)
	}
	if err := writeBoundPDF(dir); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(filepath.Join(dir, BombDOCX)); err != nil || fi.Size() > 1<<20 {
		t.Errorf("%s: %v, want it under a megabyte (%v)", BombDOCX, fi, err)
	}
	for name, want := range documentFiles {
		path := filepath.Join(dir, name)
		head, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		format := extract.Detect(name, head).Format
		doc, err := extract.Extract(context.Background(), extract.Source{Name: name, Path: path}, format, extract.Limits{})
		switch {
		case want == "" && err != nil:
			t.Errorf("%s (%s): %v, want it read", name, format, err)
		case want == "" && strings.HasSuffix(name, ".pdf") && !strings.Contains(doc.Text(), pdfQuery):
			t.Errorf("%s: text %q lacks %q", name, doc.Text(), pdfQuery)
		case want != "" && classify.Classify(err).Class != want:
			t.Errorf("%s (%s): %v, want class %s", name, format, err, want)
		}
	}
}
