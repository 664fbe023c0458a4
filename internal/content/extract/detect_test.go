package extract_test

import (
	"archive/zip"
	"bytes"
	"compress/gzip"
	"image"
	"image/jpeg"
	"image/png"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/content/extract"
)

// zipOf builds a zip archive the way the format's writers lay it out: the
// entries in order, "mimetype" stored uncompressed when it comes first.
func zipOf(t *testing.T, entries ...string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for i := 0; i < len(entries); i += 2 {
		method := zip.Deflate
		if entries[i] == "mimetype" {
			method = zip.Store
		}
		w, err := zw.CreateHeader(&zip.FileHeader{Name: entries[i], Method: method})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write([]byte(entries[i+1])); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func gzipOf(t *testing.T, s string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write([]byte(s)); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func imageOf(t *testing.T, enc func(*bytes.Buffer, image.Image) error) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := enc(&buf, image.NewGray(image.Rect(0, 0, 4, 4))); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

const contentTypes = `<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"/>`

func TestDetect(t *testing.T) {
	t.Parallel()
	pngBytes := imageOf(t, func(b *bytes.Buffer, m image.Image) error { return png.Encode(b, m) })
	jpegBytes := imageOf(t, func(b *bytes.Buffer, m image.Image) error { return jpeg.Encode(b, m, nil) })
	longText := strings.Repeat("Grüße aus Köln. ", 400) // > HeadSize, cut inside a rune somewhere
	tests := []struct {
		name, file string
		head       []byte
		want       extract.Format
		kind       extract.Kind
		mime       string
	}{
		{"pdf", "report", []byte("%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj\n"), extract.FormatPDF, extract.KindExtractable, "application/pdf"},
		{"pdf after junk", "x.bin", append(bytes.Repeat([]byte{0}, 100), "%PDF-1.4\n"...), extract.FormatPDF, extract.KindExtractable, "application/pdf"},
		{"pdf content wins over name", "notes.txt", []byte("%PDF-1.5\n"), extract.FormatPDF, extract.KindExtractable, "application/pdf"},
		{"docx", "a", zipOf(t, "[Content_Types].xml", contentTypes, "_rels/.rels", "<Relationships/>", "word/document.xml", "<w:document/>"), extract.FormatDOCX, extract.KindExtractable, ""},
		{"pptx", "a", zipOf(t, "[Content_Types].xml", contentTypes, "ppt/presentation.xml", "<p/>"), extract.FormatPPTX, extract.KindExtractable, ""},
		{"xlsx", "a", zipOf(t, "[Content_Types].xml", contentTypes, "xl/workbook.xml", "<w/>"), extract.FormatXLSX, extract.KindExtractable, ""},
		{"odt", "a", zipOf(t, "mimetype", "application/vnd.oasis.opendocument.text", "content.xml", "<x/>"), extract.FormatODT, extract.KindExtractable, "application/vnd.oasis.opendocument.text"},
		{"odp", "a", zipOf(t, "mimetype", "application/vnd.oasis.opendocument.presentation"), extract.FormatODP, extract.KindExtractable, ""},
		{"ods", "a", zipOf(t, "mimetype", "application/vnd.oasis.opendocument.spreadsheet"), extract.FormatODS, extract.KindExtractable, ""},
		{"epub", "a", zipOf(t, "mimetype", "application/epub+zip", "META-INF/container.xml", "<c/>"), extract.FormatEPUB, extract.KindExtractable, "application/epub+zip"},
		{"zip named docx", "Report.DOCX", zipOf(t, "docProps/app.xml", "<x/>"), extract.FormatDOCX, extract.KindExtractable, ""},
		{"plain zip", "archive.zip", zipOf(t, "a.txt", "hello"), extract.FormatBinary, extract.KindUnsupported, "application/zip"},
		{"not a zip named docx", "report.docx", []byte{0xD0, 0xCF, 0x11, 0xE0, 0xA1, 0xB1, 0x1A, 0xE1, 0, 0, 0, 0}, extract.FormatBinary, extract.KindUnsupported, "application/x-ole-storage"},
		{"gzip", "notes.txt.gz", gzipOf(t, "hello"), extract.FormatGzip, extract.KindExtractable, "application/gzip"},
		{"png", "scan", pngBytes, extract.FormatPNG, extract.KindExtractable, "image/png"},
		{"jpeg", "scan.jpg", jpegBytes, extract.FormatJPEG, extract.KindExtractable, "image/jpeg"},
		{"tiff little-endian", "scan.tif", []byte("II*\x00\x08\x00\x00\x00"), extract.FormatTIFF, extract.KindExtractable, "image/tiff"},
		{"tiff big-endian", "scan.tif", []byte("MM\x00*\x00\x00\x00\x08"), extract.FormatTIFF, extract.KindExtractable, "image/tiff"},
		{"elf binary", "a.out", []byte("\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00"), extract.FormatBinary, extract.KindUnsupported, "application/octet-stream"},
		{"text", "notes", []byte("hello\nworld\n"), extract.FormatText, extract.KindText, "text/plain; charset=utf-8"},
		{"empty", "empty.txt", nil, extract.FormatText, extract.KindText, ""},
		{"dotted license name", "Apache-2.0", []byte("Apache License\nVersion 2.0, January 2004\n"), extract.FormatText, extract.KindText, ""},
		{"dotted gfdl name", "GFDL-1.3", []byte("GNU Free Documentation License\n"), extract.FormatText, extract.KindText, ""},
		{"readme.debian", "README.Debian", []byte("Notes for Debian\n"), extract.FormatText, extract.KindText, ""},
		{"long utf-8 cut mid-rune", "long", []byte(longText), extract.FormatText, extract.KindText, ""},
		{"windows-1252", "legacy.txt", []byte("caf\xe9 cr\xe8me \x93quoted\x94\n"), extract.FormatText, extract.KindText, ""},
		{"utf-16le", "w.txt", []byte("\xff\xfeh\x00i\x00\n\x00"), extract.FormatText, extract.KindText, ""},
		{"utf-16be html", "w", []byte("\xfe\xff\x00<\x00h\x00t\x00m\x00l\x00>"), extract.FormatHTML, extract.KindText, ""},
		{"nul is binary", "data.txt", []byte("abc\x00def"), extract.FormatBinary, extract.KindUnsupported, ""},
		{"markdown", "README.MD", []byte("# Title\n"), extract.FormatMarkdown, extract.KindText, "text/markdown; charset=utf-8"},
		{"html by content", "page", []byte("  <!DOCTYPE html><html><body>x"), extract.FormatHTML, extract.KindText, ""},
		{"html by name", "page.htm", []byte("<p>x</p>"), extract.FormatHTML, extract.KindText, ""},
		{"xhtml", "ch1", []byte(`<?xml version="1.0"?><html xmlns="http://www.w3.org/1999/xhtml">`), extract.FormatHTML, extract.KindText, ""},
		{"xml", "feed", []byte(`<?xml version="1.0"?><rss/>`), extract.FormatXML, extract.KindText, "application/xml"},
		{"json", "data", []byte("{\n  \"a\": 1\n}\n"), extract.FormatJSON, extract.KindText, "application/json"},
		{"json array", "data", []byte(`[{"a":1},{"a":2}]`), extract.FormatJSON, extract.KindText, ""},
		{"jsonl by content", "data", []byte("{\"id\":\"1\",\"text\":\"a}\"}\n{\"id\":\"2\"}\n"), extract.FormatJSONL, extract.KindText, "application/jsonl"},
		{"jsonl by name", "data.ndjson", []byte(`{"id":"1"}`), extract.FormatJSONL, extract.KindText, ""},
		{"csv", "table.CSV", []byte("id,text\n1,hello\n"), extract.FormatCSV, extract.KindText, "text/csv"},
		{"tsv", "table.tsv", []byte("id\ttext\n1\thello\n"), extract.FormatTSV, extract.KindText, ""},
		{"json content in csv", "table.csv", []byte(`{"a":1}`), extract.FormatJSON, extract.KindText, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := extract.Detect(tt.file, tt.head)
			if got.Format != tt.want || got.Kind != tt.kind {
				t.Fatalf("Detect(%q) = %+v, want format %s kind %s", tt.file, got, tt.want, tt.kind)
			}
			if tt.mime != "" && got.MIME != tt.mime {
				t.Errorf("MIME = %q, want %q", got.MIME, tt.mime)
			}
			if got.MIME == "" {
				t.Error("MIME is empty")
			}
		})
	}
}

// TestDetectIgnoresBytesPastHead guards the HeadSize contract: what lies
// past it cannot change the verdict.
func TestDetectIgnoresBytesPastHead(t *testing.T) {
	t.Parallel()
	head := append([]byte(strings.Repeat("a", extract.HeadSize)), 0, 0, 0)
	if got := extract.Detect("x", head); got.Format != extract.FormatText {
		t.Fatalf("Detect = %+v, want text: a NUL past HeadSize must not count", got)
	}
}

func TestDetectionKinds(t *testing.T) {
	t.Parallel()
	d := extract.Detect("a.pdf", []byte("%PDF-1.7\n"))
	if !d.Extractable() || d.TextLike() || d.Unsupported() {
		t.Errorf("pdf: %+v", d)
	}
	d = extract.Detect("a.md", []byte("# x"))
	if !d.TextLike() || d.Extractable() || d.Unsupported() {
		t.Errorf("markdown: %+v", d)
	}
	d = extract.Detect("a.png", []byte("\x89PNG\r\n\x1a\n"))
	if !d.Extractable() || d.Kind.String() != "extractable" {
		t.Errorf("png: %+v", d)
	}
}
