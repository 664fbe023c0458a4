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

// The demo fails when a document file ends otherwise than Poison
// expects: a PDF or the DOCX not stored, the locked PDF or the bomb
// stored or parked with another class, or no PDF found by its text.
func TestFilesCheck(t *testing.T) {
	t.Parallel()
	good := func() filed {
		f := filed{Status: map[string]string{}, Class: map[string]string{}, Found: ReportPDF, Rank: 1}
		for name, class := range documentFiles {
			f.Status[name], f.Class[name] = "ready", class
			if class != "" {
				f.Status[name] = "failed"
			}
		}
		return f
	}
	if f := good(); f.check() != nil {
		t.Fatalf("check of %+v: %v", f, f.check())
	}
	for name, change := range map[string]func(*filed){
		"PDF failed":           func(f *filed) { f.Status[BoundPDF] = "failed" },
		"DOCX missing":         func(f *filed) { f.Status[MinutesDOCX] = "" },
		"PDF ready but parked": func(f *filed) { f.Class[ReportPDF] = classify.ClassCorrupt },
		"locked PDF stored":    func(f *filed) { f.Status[LockedPDF], f.Class[LockedPDF] = "ready", "" },
		"bomb parked as else":  func(f *filed) { f.Class[BombDOCX] = classify.ClassTooLarge },
		"no PDF found by text": func(f *filed) { f.Found, f.Rank = "", 0 },
	} {
		f := good()
		change(&f)
		if err := f.check(); err == nil {
			t.Errorf("%s: check of %+v passed", name, f)
		}
	}
}
