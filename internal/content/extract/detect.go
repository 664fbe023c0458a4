package extract

import (
	"bytes"
	"encoding/binary"
	"net/http"
	"path"
	"strings"
)

// HeadSize is how many leading bytes of a file Detect needs to decide its
// format. Fewer are fine for a shorter file; more are ignored.
const HeadSize = 4096

// Detection is Detect's verdict on one file.
type Detection struct {
	// Format is the detected format.
	Format Format
	// MIME is a media type for humans: the format's usual one, or for
	// FormatBinary what net/http.DetectContentType makes of the bytes
	// ("application/zip", "application/x-ole-storage", ...).
	MIME string
	// Kind says whether the content is readable as text, extractable by
	// this package, or unsupported.
	Kind Kind
}

// TextLike reports whether the content is readable as text once decoded.
func (d Detection) TextLike() bool { return d.Kind == KindText }

// Extractable reports whether the content is a document format whose text
// Extract pulls out.
func (d Detection) Extractable() bool { return d.Kind == KindExtractable }

// Unsupported reports whether the content is binary this package cannot
// turn into text; such a file ends in class unsupported_format.
func (d Detection) Unsupported() bool { return d.Kind == KindUnsupported }

// Magic numbers, from each format's specification.
var (
	magicPDF   = []byte("%PDF-")
	magicZip   = []byte("PK\x03\x04")
	magicGzip  = []byte{0x1f, 0x8b}
	magicPNG   = []byte("\x89PNG\r\n\x1a\n")
	magicJPEG  = []byte{0xFF, 0xD8, 0xFF}
	magicTIFFI = []byte("II*\x00")
	magicTIFFM = []byte("MM\x00*")
	magicOLE   = []byte{0xD0, 0xCF, 0x11, 0xE0, 0xA1, 0xB1, 0x1A, 0xE1}
)

// pdfHeaderWindow is how far into a file a PDF header may start: readers
// accept up to 1024 bytes of junk before it (ISO 32000-2, annex H).
const pdfHeaderWindow = 1024

// Detect decides the format of a file from head, its first HeadSize bytes
// (or all of it if shorter), and its name.
//
// The content decides first: the magic numbers of PDF, zip (then the
// entries named in its local file headers: a first entry "mimetype" holding
// the ODF or EPUB media type, or the word/, ppt/ and xl/ parts of Office
// Open XML), gzip, PNG, JPEG and TIFF. Content that is none of these and
// decodes as text (UTF-8, UTF-16 with a BOM, or Windows-1252, with no NUL
// and few control characters) is text; an XML declaration, an HTML doctype
// or <html> tag, or a leading '{' or '[' make it XML, HTML, JSON or JSONL.
// The name decides second, among text only: .md and .markdown are
// Markdown, .csv CSV, .tsv and .tab TSV, .jsonl and .ndjson JSONL, .html
// and .htm HTML, .json JSON, .xml XML, case-insensitively; any other name,
// with or without a dot (Apache-2.0, GFDL-1.3, README.Debian), is plain
// text. A name never turns binary content into a document format: a
// non-zip file named report.docx is FormatBinary.
func Detect(name string, head []byte) Detection {
	if len(head) > HeadSize {
		head = head[:HeadSize]
	}
	if f, ok := sniffBinary(head); ok {
		return detection(f)
	}
	if isZip(head) {
		if f, ok := sniffZip(head); ok {
			return detection(f)
		}
		if f, ok := zipByName(name); ok {
			return detection(f)
		}
	}
	if !looksLikeText(head) {
		return Detection{Format: FormatBinary, MIME: binaryMIME(head), Kind: KindUnsupported}
	}
	return detection(sniffText(name, head))
}

func detection(f Format) Detection {
	return Detection{Format: f, MIME: f.MIME(), Kind: f.Kind()}
}

func sniffBinary(head []byte) (Format, bool) {
	switch {
	case bytes.Contains(head[:min(len(head), pdfHeaderWindow+len(magicPDF))], magicPDF) && !looksLikeText(head):
		return FormatPDF, true
	case bytes.HasPrefix(head, magicPDF):
		return FormatPDF, true
	case bytes.HasPrefix(head, magicGzip):
		return FormatGzip, true
	case bytes.HasPrefix(head, magicPNG):
		return FormatPNG, true
	case bytes.HasPrefix(head, magicJPEG):
		return FormatJPEG, true
	case bytes.HasPrefix(head, magicTIFFI), bytes.HasPrefix(head, magicTIFFM):
		return FormatTIFF, true
	}
	return "", false
}

func isZip(head []byte) bool { return bytes.HasPrefix(head, magicZip) }

// zipMediaTypes are the "mimetype" entries ODF and EPUB put first, stored
// uncompressed, so that the type can be read at a fixed offset.
var zipMediaTypes = map[string]Format{
	"application/vnd.oasis.opendocument.text":         FormatODT,
	"application/vnd.oasis.opendocument.presentation": FormatODP,
	"application/vnd.oasis.opendocument.spreadsheet":  FormatODS,
	"application/epub+zip":                            FormatEPUB,
}

// ooxmlParts are the part folders of each Office Open XML format.
var ooxmlParts = []struct {
	prefix string
	format Format
}{
	{"word/", FormatDOCX},
	{"ppt/", FormatPPTX},
	{"xl/", FormatXLSX},
}

// sniffZip walks the local file headers within head.
func sniffZip(head []byte) (Format, bool) {
	sawContentTypes := false
	for off := 0; off+30 <= len(head) && bytes.HasPrefix(head[off:], magicZip); {
		h := head[off:]
		flags := binary.LittleEndian.Uint16(h[6:])
		method := binary.LittleEndian.Uint16(h[8:])
		csize := int(binary.LittleEndian.Uint32(h[18:]))
		nameLen := int(binary.LittleEndian.Uint16(h[26:]))
		extraLen := int(binary.LittleEndian.Uint16(h[28:]))
		if 30+nameLen > len(h) {
			break
		}
		entry := string(h[30 : 30+nameLen])
		data := 30 + nameLen + extraLen
		if off == 0 && entry == "mimetype" && method == 0 {
			if f, ok := mediaTypeAt(h[min(data, len(h)):]); ok {
				return f, true
			}
		}
		if entry == "[Content_Types].xml" {
			sawContentTypes = true
		}
		for _, p := range ooxmlParts {
			if sawContentTypes && strings.HasPrefix(entry, p.prefix) {
				return p.format, true
			}
		}
		if flags&0x8 != 0 {
			// The sizes follow the data; the next header cannot be found
			// without inflating, so look for its signature instead.
			next := bytes.Index(h[data:], magicZip)
			if next < 0 {
				break
			}
			off += data + next
			continue
		}
		off += data + csize
	}
	return "", false
}

// mediaTypeAt reads the stored "mimetype" entry's data. Its size is not
// relied on: a writer that streams sets it only in a trailing descriptor,
// so the data is matched against each known media type instead.
func mediaTypeAt(data []byte) (Format, bool) {
	for mt, f := range zipMediaTypes {
		if rest, ok := bytes.CutPrefix(data, []byte(mt)); ok && !startsMediaTypeChar(rest) {
			return f, true
		}
	}
	return "", false
}

// startsMediaTypeChar reports whether b goes on with a media type
// character, so that "...opendocument.text" is not taken for the start of
// "...opendocument.text-template".
func startsMediaTypeChar(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	c := b[0]
	return c == '-' || c == '.' || c == '+' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9'
}

// zipByName names the format of a zip whose first entries did not tell,
// by the only evidence left.
func zipByName(name string) (Format, bool) {
	switch ext(name) {
	case ".docx":
		return FormatDOCX, true
	case ".pptx":
		return FormatPPTX, true
	case ".xlsx":
		return FormatXLSX, true
	case ".odt":
		return FormatODT, true
	case ".odp":
		return FormatODP, true
	case ".ods":
		return FormatODS, true
	case ".epub":
		return FormatEPUB, true
	}
	return "", false
}

// binaryMIME names binary content of no known format.
func binaryMIME(head []byte) string {
	if bytes.HasPrefix(head, magicOLE) {
		// Legacy Office (.doc, .xls, .ppt, .msg) and other compound files.
		return "application/x-ole-storage"
	}
	return http.DetectContentType(head)
}

// textExtensions are the names that narrow text down.
var textExtensions = map[string]Format{
	".md":       FormatMarkdown,
	".markdown": FormatMarkdown,
	".csv":      FormatCSV,
	".tsv":      FormatTSV,
	".tab":      FormatTSV,
	".jsonl":    FormatJSONL,
	".ndjson":   FormatJSONL,
	".html":     FormatHTML,
	".htm":      FormatHTML,
	".xhtml":    FormatHTML,
	".json":     FormatJSON,
	".xml":      FormatXML,
}

func sniffText(name string, head []byte) Format {
	byName, named := textExtensions[ext(name)]
	body := bytes.TrimLeft(utf8Body(head), " \t\r\n\f")
	lower := bytes.ToLower(body[:min(len(body), 512)])
	switch {
	case bytes.HasPrefix(lower, []byte("<!doctype html")), bytes.HasPrefix(lower, []byte("<html")):
		return FormatHTML
	case bytes.HasPrefix(body, []byte("<?xml")):
		if bytes.Contains(lower, []byte("<!doctype html")) || bytes.Contains(lower, []byte("<html")) {
			return FormatHTML
		}
		return FormatXML
	case len(body) > 0 && (body[0] == '{' || body[0] == '['):
		if named && (byName == FormatJSONL || byName == FormatJSON) {
			return byName
		}
		return sniffJSON(body)
	}
	if named {
		return byName
	}
	return FormatText
}

// sniffJSON tells one JSON document from one per line: JSONL's first line
// is a complete value and the next begins another.
func sniffJSON(body []byte) Format {
	line, rest, ok := bytes.Cut(body, []byte("\n"))
	rest = bytes.TrimLeft(rest, " \t\r")
	if ok && len(rest) > 0 && (rest[0] == '{' || rest[0] == '[') && balanced(line) {
		return FormatJSONL
	}
	return FormatJSON
}

// balanced reports whether the brackets of a JSON line, outside strings,
// close as many as they open.
func balanced(line []byte) bool {
	depth, inString, escaped := 0, false, false
	for _, c := range line {
		switch {
		case escaped:
			escaped = false
		case inString && c == '\\':
			escaped = true
		case c == '"':
			inString = !inString
		case inString:
		case c == '{' || c == '[':
			depth++
		case c == '}' || c == ']':
			depth--
		}
	}
	return depth == 0 && !inString
}

// ext returns name's extension in lower case, "" for none.
func ext(name string) string { return strings.ToLower(path.Ext(strings.ReplaceAll(name, "\\", "/"))) }
