// Package extract tells what a file is and pulls the text out of the
// document formats the corpus reader cannot read as text.
//
// Detect decides a file's Format from its first HeadSize (4096) bytes,
// content first and name second, and says whether the file is readable as
// text, extractable by this package, or unsupported binary. Every file gets
// a Detection: nothing is left unaccounted for.
//
// Extract returns a Document: the text in reading order as sections, each
// with its location (PDF page, slide, sheet and row), and the title where
// the format has one. PDFs are read by poppler's pdfinfo and pdftotext as
// subprocesses, which are the sandbox: their own process group killed at
// the timeout, an address-space cap set by prlimit, output capped; they
// need no network. The zip-based formats are read with archive/zip and
// streamed encoding/xml, which never expands a declared entity.
//
// The package guarantees that a hostile file costs at most its Limits:
// time (Timeout), file size (MaxBytes), PDF pages (MaxPages), zip entries
// (MaxEntries), bytes inflated and text produced (MaxUncompressed), and a
// PDF tool's memory (MaxMemory). A file that fails is an *Error whose
// Class is one of pkg/classify's extraction classes, which classify.Classify
// reads; the caller adds the file's identity. docs/formats.md lists the
// formats, their limits and classes.
//
// The package touches no infrastructure besides the PDF tools it runs.
package extract
