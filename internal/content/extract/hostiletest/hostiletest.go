// Package hostiletest builds hostile files at test time, each aimed at
// one of extraction's limits: a zip bomb, an XML billion laughs, a PDF
// of more pages than any limit allows, and a long real PDF that takes
// seconds to read. Tests of extraction and of the producer use it; no
// product code does.
package hostiletest

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/content/extract/scantest"
)

// ZipBomb returns a DOCX whose document.xml inflates to gib GiB of zeros
// from about a megabyte per GiB, its header claiming claim bytes. The
// deflate stream repeats one block that writes 1 MiB of zeros from a
// window of zeros, so it is built without compressing the whole.
func ZipBomb(t testing.TB, gib int, claim uint64) []byte {
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

// ContentTypes is a DOCX's minimal [Content_Types].xml.
const ContentTypes = `<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"/>`

// BillionLaughs returns a DOCX whose document.xml declares nine levels
// of entities, each ten of the one below, and refers to the last: a
// billion "lol"s if a parser expanded them.
func BillionLaughs(t testing.TB) []byte {
	t.Helper()
	var doc strings.Builder
	doc.WriteString(`<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol">`)
	for i := 1; i <= 9; i++ {
		fmt.Fprintf(&doc, `<!ENTITY lol%d "%s">`, i, strings.Repeat(fmt.Sprintf("&lol%d;", i-1), 10))
	}
	doc.WriteString(`]><w:document xmlns:w="w"><w:body><w:p><w:r><w:t>&lol9;</w:t></w:r></w:p></w:body></w:document>`)
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, e := range [][2]string{{"[Content_Types].xml", ContentTypes}, {"word/document.xml", doc.String()}} {
		w, err := zw.Create(e[0])
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write([]byte(e[1])); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// ManyPagesPDF returns a valid PDF of n empty pages, every page object
// real.
func ManyPagesPDF(n int) []byte {
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
	return out.Bytes()
}

// LongPDF writes, at path, a real PDF of 3 × copies text pages:
// extract's testdata/pages.pdf repeated by qpdf. At 10,000 copies
// pdftotext reads it in seconds.
func LongPDF(t testing.TB, path string, copies int) {
	t.Helper()
	pdfs := make([]string, copies)
	for i := range pdfs {
		pdfs[i] = scantest.PagesPDF()
	}
	scantest.MergePDFs(t, filepath.Dir(path), filepath.Base(path), pdfs...)
}
