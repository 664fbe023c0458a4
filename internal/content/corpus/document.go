package corpus

import "github.com/sluicehq/sluice/internal/content/extract"

// Status says whether a Document can be chunked and embedded.
type Status string

const (
	// StatusOK means Text holds the document's content, ready to chunk.
	StatusOK Status = "ok"
	// StatusEmpty means the document decoded (and, for HTML, reduced) to
	// nothing but whitespace. Err matches ErrEmpty.
	StatusEmpty Status = "empty"
	// StatusUndecodable means the bytes are neither valid UTF-8 nor plausible
	// Windows-1252 text. Err matches ErrUndecodable; Text is empty.
	StatusUndecodable Status = "undecodable"
	// StatusInvalid means the document could not be read as a document at
	// all: an invalid JSONL line, a size over the limit, or a file that
	// could not be read. Err says which; Text is empty.
	StatusInvalid Status = "invalid"
	// StatusUnsupported means the file's content is not text and was not
	// extracted: see UnsupportedError. Err matches ErrUnsupportedFormat;
	// Text is empty.
	StatusUnsupported Status = "unsupported"
	// StatusDeleted means the record is a tombstone, {"id": "...",
	// "deleted": true}: the source deleted the document. Deleted is set;
	// Text is empty.
	StatusDeleted Status = "deleted"
)

// Format is how a file's content is interpreted.
type Format string

const (
	// FormatText is plain text, kept as decoded.
	FormatText Format = "text"
	// FormatMarkdown is Markdown, kept as decoded: embedding models read the
	// markup well and it carries the document's structure.
	FormatMarkdown Format = "markdown"
	// FormatHTML is HTML, reduced to its readable text by ReduceHTML.
	FormatHTML Format = "html"
	// FormatJSONL is one JSON record per line, each its own document.
	FormatJSONL Format = "jsonl"
)

// Document is one unit of ingestion as read from a source.
//
// Every Document a Reader yields must be recorded by the caller, whatever
// its Status: the ones that are not StatusOK are the ones an operator will
// want to find parked, not missing.
type Document struct {
	// NativeID identifies the document within its source, stably across
	// runs: the slash-separated path relative to the input for files, the
	// record's id for JSONL. Not checked for uniqueness: see Reader.Walk.
	NativeID string
	// Text is the decoded, normalised content; empty unless Status is
	// StatusOK.
	Text string
	// Metadata describes the document. For files: "path", "format" (the
	// detected extract.Format), "codec", "bytes" and, for HTML or an
	// extracted document with a title, "title". For JSONL: the
	// record's own "metadata" object, never nil. JSON numbers are
	// json.Number so that they round-trip exactly.
	Metadata map[string]any
	// Pages locates the pages of a PDF, or the slides of a PPTX or ODP,
	// in Text, in order; nil for a document without pages. See PagesOf.
	Pages []PageSpan
	// OCR lists the pages of a scan or image that OCR read, with their
	// confidence and time, whether the document was then read or parked
	// below its bar; nil when OCR read none.
	OCR []extract.PageOCR
	// Recognised is, for a scan parked below its bar, the text OCR read
	// from it, its pages joined as a read document's are; kept with the
	// parked file's bytes for the person who keys its text in.
	Recognised string
	// Codec is the encoding the bytes were decoded from: "utf-8",
	// "windows-1252", "utf-16le" or "utf-16be"; empty when undecodable.
	Codec string
	// Status says whether Text can be used.
	Status Status
	// Deleted is true for a tombstone: the document was deleted at its
	// source and must be deleted here too.
	Deleted bool
	// Err is why the document is not StatusOK; nil when it is.
	Err error
	// Size is the size in bytes of the document's raw source: the file, or
	// the JSONL line without its line ending.
	Size int64
	// File is, for a document that is a whole file (or stdin), the file
	// as FileEvent.Path names it; empty for a JSONL record.
	File string
	// Detected is the format extract.Detect found, for a whole file.
	Detected extract.Detection
	// SHA256 is the hex SHA-256 of a whole file's bytes, when they were
	// read to the end; empty otherwise.
	SHA256 string
}
