package extract

// Format is what Detect takes a file's content to be. The values of the text
// formats shared with the corpus reader (text, markdown, html, jsonl) are
// spelled the same as corpus.Format's.
type Format string

// The formats Detect recognises.
const (
	// FormatText is plain text in UTF-8, UTF-16 with a BOM or Windows-1252.
	FormatText Format = "text"
	// FormatMarkdown is text named *.md or *.markdown.
	FormatMarkdown Format = "markdown"
	// FormatHTML is HTML or XHTML, reduced to its readable text.
	FormatHTML Format = "html"
	// FormatJSONL is one JSON value per line.
	FormatJSONL Format = "jsonl"
	// FormatJSON is one JSON document.
	FormatJSON Format = "json"
	// FormatXML is an XML document other than XHTML.
	FormatXML Format = "xml"
	// FormatCSV is comma-separated values.
	FormatCSV Format = "csv"
	// FormatTSV is tab-separated values.
	FormatTSV Format = "tsv"
	// FormatPDF is a PDF document; its text layer is extracted page by page.
	FormatPDF Format = "pdf"
	// FormatDOCX is an Office Open XML word-processing document.
	FormatDOCX Format = "docx"
	// FormatPPTX is an Office Open XML presentation.
	FormatPPTX Format = "pptx"
	// FormatXLSX is an Office Open XML workbook.
	FormatXLSX Format = "xlsx"
	// FormatODT is an OpenDocument text document.
	FormatODT Format = "odt"
	// FormatODP is an OpenDocument presentation.
	FormatODP Format = "odp"
	// FormatODS is an OpenDocument spreadsheet.
	FormatODS Format = "ods"
	// FormatEPUB is an EPUB book.
	FormatEPUB Format = "epub"
	// FormatGzip is a gzip stream; its content is detected and extracted in
	// turn.
	FormatGzip Format = "gzip"
	// FormatPNG is a PNG image, read by OCR.
	FormatPNG Format = "png"
	// FormatJPEG is a JPEG image, read by OCR.
	FormatJPEG Format = "jpeg"
	// FormatTIFF is a TIFF image, the usual container of scans, read by
	// OCR page by page.
	FormatTIFF Format = "tiff"
	// FormatBinary is binary content of no format this package knows;
	// Detection.MIME names what it looks like.
	FormatBinary Format = "binary"
)

// Kind says what can be done with a format.
type Kind uint8

const (
	// KindUnsupported is binary content this package cannot turn into
	// text: anything of no known format. Such a file ends in
	// class unsupported_format.
	KindUnsupported Kind = iota
	// KindText is content readable as text once decoded: text, Markdown,
	// HTML, JSON, JSONL, XML, CSV and TSV.
	KindText
	// KindExtractable is a document format whose text Extract pulls out:
	// PDF, the Office and OpenDocument formats, EPUB, gzip, and the images
	// (PNG, JPEG, TIFF) it reads by OCR.
	KindExtractable
)

// String returns "text", "extractable" or "unsupported".
func (k Kind) String() string {
	switch k {
	case KindText:
		return "text"
	case KindExtractable:
		return "extractable"
	}
	return "unsupported"
}

// formatInfo is the fixed description of a known format.
type formatInfo struct {
	mime string
	kind Kind
}

var formats = map[Format]formatInfo{
	FormatText:     {"text/plain; charset=utf-8", KindText},
	FormatMarkdown: {"text/markdown; charset=utf-8", KindText},
	FormatHTML:     {"text/html; charset=utf-8", KindText},
	FormatJSONL:    {"application/jsonl", KindText},
	FormatJSON:     {"application/json", KindText},
	FormatXML:      {"application/xml", KindText},
	FormatCSV:      {"text/csv", KindText},
	FormatTSV:      {"text/tab-separated-values", KindText},
	FormatPDF:      {"application/pdf", KindExtractable},
	FormatDOCX:     {"application/vnd.openxmlformats-officedocument.wordprocessingml.document", KindExtractable},
	FormatPPTX:     {"application/vnd.openxmlformats-officedocument.presentationml.presentation", KindExtractable},
	FormatXLSX:     {"application/vnd.openxmlformats-officedocument.spreadsheetml.sheet", KindExtractable},
	FormatODT:      {"application/vnd.oasis.opendocument.text", KindExtractable},
	FormatODP:      {"application/vnd.oasis.opendocument.presentation", KindExtractable},
	FormatODS:      {"application/vnd.oasis.opendocument.spreadsheet", KindExtractable},
	FormatEPUB:     {"application/epub+zip", KindExtractable},
	FormatGzip:     {"application/gzip", KindExtractable},
	FormatPNG:      {"image/png", KindExtractable},
	FormatJPEG:     {"image/jpeg", KindExtractable},
	FormatTIFF:     {"image/tiff", KindExtractable},
	FormatBinary:   {"application/octet-stream", KindUnsupported},
}

// Kind returns what can be done with f; an unknown Format is unsupported.
func (f Format) Kind() Kind { return formats[f].kind }

// MIME returns the usual media type of f, application/octet-stream for an
// unknown Format.
func (f Format) MIME() string {
	if info, ok := formats[f]; ok {
		return info.mime
	}
	return formats[FormatBinary].mime
}
