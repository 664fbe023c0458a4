package extract

import (
	"fmt"
	"time"
)

// Default limits, applied to every zero field of Limits.
const (
	// DefaultTimeout bounds the wall-clock time of one extraction.
	DefaultTimeout = 2 * time.Minute
	// DefaultMaxBytes bounds the size of the file itself.
	DefaultMaxBytes int64 = 256 << 20
	// DefaultMaxPages bounds a PDF's page count.
	DefaultMaxPages = 5000
	// DefaultMaxEntries bounds the entries of a zip-based format.
	DefaultMaxEntries = 10000
	// DefaultMaxUncompressed bounds the bytes inflated from a zip entry or
	// a gzip stream, all entries together, and the text extracted.
	DefaultMaxUncompressed int64 = 512 << 20
	// DefaultMaxMemory bounds the address space of a PDF tool's process.
	DefaultMaxMemory int64 = 1 << 30
	// DefaultMaxPixels bounds the width × height of an image or of a PDF
	// page rendered for OCR: an A0 sheet at 300 dpi is about 140 million.
	DefaultMaxPixels int64 = 100_000_000
)

// Limits bound what one extraction may cost. A zero field takes its
// default.
type Limits struct {
	// Timeout bounds the wall-clock time of one extraction; past it the
	// extraction stops with class extract_timeout. Defaults to
	// DefaultTimeout (2 minutes).
	Timeout time.Duration
	// MaxBytes bounds the file's size; a larger file is too_large. Defaults
	// to DefaultMaxBytes (256 MiB).
	MaxBytes int64
	// MaxPages bounds a PDF's page count, read before any text is; more is
	// too_large. Defaults to DefaultMaxPages (5000).
	MaxPages int
	// MaxEntries bounds the entries of a DOCX, PPTX, XLSX, ODF or EPUB
	// file; more is too_large. Defaults to DefaultMaxEntries (10000).
	MaxEntries int
	// MaxUncompressed bounds the bytes inflated from a zip-based file or a
	// gzip stream, whatever their headers claim, and the text extracted
	// from any file; more is extract_memory. Defaults to
	// DefaultMaxUncompressed (512 MiB).
	MaxUncompressed int64
	// MaxMemory bounds the address space of each PDF or OCR tool's process
	// (prlimit --as); a tool that runs out is extract_memory. Defaults to
	// DefaultMaxMemory (1 GiB).
	MaxMemory int64
	// MaxPixels bounds the width × height of an image (PNG, JPEG, TIFF,
	// every page of it), read from its header, and of a PDF page rendered
	// for OCR at 300 dpi, before any OCR tool decodes it; more is
	// too_large. Defaults to DefaultMaxPixels (100 million).
	MaxPixels int64
}

// withDefaults returns l with every zero field set to its default.
func (l Limits) withDefaults() Limits {
	if l.Timeout == 0 {
		l.Timeout = DefaultTimeout
	}
	if l.MaxBytes == 0 {
		l.MaxBytes = DefaultMaxBytes
	}
	if l.MaxPages == 0 {
		l.MaxPages = DefaultMaxPages
	}
	if l.MaxEntries == 0 {
		l.MaxEntries = DefaultMaxEntries
	}
	if l.MaxUncompressed == 0 {
		l.MaxUncompressed = DefaultMaxUncompressed
	}
	if l.MaxMemory == 0 {
		l.MaxMemory = DefaultMaxMemory
	}
	if l.MaxPixels == 0 {
		l.MaxPixels = DefaultMaxPixels
	}
	return l
}

// Validate reports a negative limit, which has no meaning.
func (l Limits) Validate() error {
	switch {
	case l.Timeout < 0:
		return fmt.Errorf("extract limits: timeout %v is negative: set a positive duration, or 0 for %v", l.Timeout, DefaultTimeout)
	case l.MaxBytes < 0, l.MaxUncompressed < 0, l.MaxMemory < 0:
		return fmt.Errorf("extract limits: a byte limit is negative (max bytes %d, max uncompressed %d, max memory %d): set a positive size, or 0 for the default", l.MaxBytes, l.MaxUncompressed, l.MaxMemory)
	case l.MaxPages < 0, l.MaxEntries < 0, l.MaxPixels < 0:
		return fmt.Errorf("extract limits: a count limit is negative (max pages %d, max entries %d, max pixels %d): set a positive count, or 0 for the default", l.MaxPages, l.MaxEntries, l.MaxPixels)
	}
	return nil
}
