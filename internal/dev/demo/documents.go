package demo

import (
	"archive/zip"
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sluicehq/sluice/internal/content/extract"
	"github.com/sluicehq/sluice/internal/content/extract/scantest"
	"github.com/sluicehq/sluice/internal/store/manifest"
	"github.com/sluicehq/sluice/pkg/classify"
)

// The corpus's document files, in its poison folder: the sync run deletes
// none of them, and tests/deploytest, which removes the folder, ingests
// text only.
const (
	// ReportPDF is extract's testdata/pages.pdf: three pages of text, a
	// sentence each (scantest.Sentence1 to 3).
	ReportPDF = "poison/report.pdf"
	// BoundPDF is pages.pdf four times over, joined by qpdf.
	BoundPDF = "poison/report-bound.pdf"
	// MinutesDOCX is extract's testdata/sample.docx, written by pandoc.
	MinutesDOCX = "poison/minutes.docx"
	// LockedPDF is extract's testdata/encrypted.pdf: pages.pdf behind a
	// password.
	LockedPDF = "poison/locked.pdf"
	// BombDOCX is a zip bomb (writeBomb).
	BombDOCX = "poison/bomb.docx"
)

// documentFiles are the document files with the class of the dead letter
// each is expected to be parked with, "" for one expected stored.
var documentFiles = map[string]string{
	ReportPDF: "", BoundPDF: "", MinutesDOCX: "",
	LockedPDF: classify.ClassEncrypted, BombDOCX: classify.ClassExtractMemory,
}

// testdataCopies are the document files copied from extract's testdata,
// each with the name of its original.
var testdataCopies = map[string]string{ReportPDF: "pages.pdf", MinutesDOCX: "sample.docx", LockedPDF: "encrypted.pdf"}

// pdfQuery is the search the demo finds a PDF by: page 1's sentence.
const pdfQuery = scantest.Sentence1

// bombSize is what the bomb's document.xml inflates to: past the
// producer's default inflate limit, which refuses the entry on its
// header's word, before inflating a byte of it.
const bombSize = extract.DefaultMaxUncompressed + 64<<20

// copyTestdata adds the copies of extract's testdata files to files.
func copyTestdata(files map[string][]byte) error {
	dir := filepath.Dir(scantest.PagesPDF())
	for name, from := range testdataCopies {
		b, err := os.ReadFile(filepath.Join(dir, from))
		if err != nil {
			return fmt.Errorf("copy %s (the demo runs from a source checkout): %w", from, err)
		}
		files[name] = b
	}
	return nil
}

// writeBomb writes BombDOCX under dir: a DOCX whose document.xml is one
// paragraph of bombSize bytes of "a", which archive/zip deflates to about
// a thousandth of that. It is deflated and written a megabyte at a time,
// so that the demo never holds it whole.
func writeBomb(dir string) error {
	path := filepath.Join(dir, BombDOCX)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	zw := zip.NewWriter(f)
	err = writeBombParts(zw)
	return errors.Join(err, zw.Close(), f.Close())
}

// writeBombParts writes the bomb's content types and its document.xml.
func writeBombParts(zw *zip.Writer) error {
	w, err := zw.Create("[Content_Types].xml")
	if err != nil {
		return err
	}
	if _, err := io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">`+
		`<Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>`); err != nil {
		return err
	}
	if w, err = zw.Create("word/document.xml"); err != nil {
		return err
	}
	if _, err := io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body><w:p><w:r><w:t>`); err != nil {
		return err
	}
	block := bytes.Repeat([]byte("a"), 1<<20)
	for range bombSize >> 20 {
		if _, err := w.Write(block); err != nil {
			return err
		}
	}
	_, err = io.WriteString(w, `</w:t></w:r></w:p></w:body></w:document>`)
	return err
}

// writeBoundPDF joins four copies of pages.pdf into BoundPDF under dir
// with qpdf.
func writeBoundPDF(dir string) error {
	pdf := scantest.PagesPDF()
	_, err := scantest.Merge(filepath.Join(dir, filepath.Dir(BoundPDF)), filepath.Base(BoundPDF), pdf, pdf, pdf, pdf)
	return err
}

// filed is what became of the document files, as PostgreSQL and a search
// tell it.
type filed struct {
	// Status is each file's document status, Class the class of its open
	// dead letter; "" when there is none.
	Status, Class map[string]string
	// Found is the document file a search for pdfQuery finds first, at
	// Rank; "" and 0 when it finds none.
	Found string
	Rank  int
}

// readFiles reads what became of the document files, and searches for
// the PDFs' text through the sluice CLI.
func (s *stack) readFiles(ctx context.Context, pool *pgxpool.Pool) (filed, error) {
	f := filed{Status: map[string]string{}, Class: map[string]string{}}
	for name := range documentFiles {
		status, class, _, err := docOutcome(ctx, pool, corpusSource, name)
		if err != nil {
			return f, err
		}
		f.Status[name], f.Class[name] = status, class
	}
	hits, err := s.search(pdfQuery)
	if err != nil {
		return f, err
	}
	for _, h := range hits {
		if _, ok := documentFiles[h.SourceNativeID]; ok && h.SourceID == corpusSource {
			f.Found, f.Rank = h.SourceNativeID, h.Rank
			break
		}
	}
	return f, nil
}

// check says how the document files' outcome differs from what Poison
// expects.
func (f filed) check() error {
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(documentFiles)) {
		want, status, class := documentFiles[name], f.Status[name], f.Class[name]
		switch {
		case want == "" && (status != string(manifest.DocReady) || class != ""):
			errs = append(errs, fmt.Errorf("%s: document %q, open dead letter of class %q; want it ready (stored)", name, status, class))
		case want != "" && class != want:
			errs = append(errs, fmt.Errorf("%s: open dead letter of class %q; want it parked as %s", name, class, want))
		}
	}
	if f.Rank == 0 {
		errs = append(errs, fmt.Errorf("a search for %q found no document file; want a PDF found", pdfQuery))
	}
	return errors.Join(errs...)
}

// write prints the document files' lines of the report.
func (f filed) write(w io.Writer) {
	label := "files"
	for _, name := range slices.Sorted(maps.Keys(documentFiles)) {
		outcome := "document " + cmp.Or(f.Status[name], "missing")
		if f.Class[name] != "" {
			outcome = "parked as " + f.Class[name]
		}
		fmt.Fprintf(w, "  %-13s %s: %s\n", label, name, outcome)
		label = ""
	}
	found := "no document file"
	if f.Rank > 0 {
		found = fmt.Sprintf("%s at rank %d", f.Found, f.Rank)
	}
	fmt.Fprintf(w, "  %-13s a search for %q finds %s\n", "", pdfQuery, found)
}
