package corpus

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/sluicehq/sluice/internal/content/extract"
)

// Sentinels matched with errors.Is against Document.Err. Each non-OK
// Document's Err matches exactly one of them, except a file that could not
// be read, whose Err wraps the file system's error (fs.ErrPermission, …).
var (
	// ErrUndecodable matches documents whose bytes are not text.
	ErrUndecodable = errors.New("undecodable text")
	// ErrEmpty matches documents with no content but whitespace.
	ErrEmpty = errors.New("empty document")
	// ErrTooLarge matches documents or JSONL lines over the configured limit.
	ErrTooLarge = errors.New("document too large")
	// ErrInvalidRecord matches JSONL lines that are not a valid record.
	ErrInvalidRecord = errors.New("invalid record")
	// ErrUnsupportedFormat matches files whose content is not text and
	// cannot be extracted: see UnsupportedError.
	ErrUnsupportedFormat = errors.New("unsupported format")
)

// UnsupportedError reports a file whose detected format cannot be read:
// binary of no known format, an image, or a document format with no
// Extractor configured. It matches ErrUnsupportedFormat.
type UnsupportedError struct {
	// Detected is what extract.Detect found the content to be.
	Detected extract.Detection
	// NoExtractor is true for a document format that an Extractor would
	// read.
	NoExtractor bool
}

// Error implements error.
func (e *UnsupportedError) Error() string {
	if e.NoExtractor {
		return fmt.Sprintf("no extractor for %s configured", e.Detected.MIME)
	}
	return fmt.Sprintf("unsupported format: the content is %s (%s), not text", e.Detected.MIME, e.Detected.Format)
}

// Is makes errors.Is(err, ErrUnsupportedFormat) true.
func (e *UnsupportedError) Is(target error) bool { return target == ErrUnsupportedFormat }

// DecodeError reports input that is not text. It matches ErrUndecodable.
type DecodeError struct {
	// Offset is the byte offset of the first offending byte in the input
	// given to the decoder (for a JSONL record: in its "text" value).
	Offset int64
	// Reason says what made the input look binary.
	Reason string
}

// Error implements error.
func (e *DecodeError) Error() string {
	return fmt.Sprintf("undecodable text at byte %d: %s", e.Offset, e.Reason)
}

// Is makes errors.Is(err, ErrUndecodable) true.
func (e *DecodeError) Is(target error) bool { return target == ErrUndecodable }

// Settings named by TooLargeError.Setting: the Config field that sets the
// limit.
const (
	SettingMaxDocumentBytes = "MaxDocumentBytes"
	SettingMaxLineBytes     = "MaxLineBytes"
)

// TooLargeError reports a document or JSONL line over its size limit. It
// matches ErrTooLarge. Its message names the limit and the setting that
// raises it.
type TooLargeError struct {
	// Size is the size in bytes, or 0 when it is unknown because the input
	// is a stream that was not read to its end.
	Size int64
	// Limit is the configured maximum in bytes.
	Limit int64
	// Setting is the Config field holding Limit: SettingMaxDocumentBytes
	// or SettingMaxLineBytes.
	Setting string
}

// Error implements error.
func (e *TooLargeError) Error() string {
	what := "document"
	if e.Setting == SettingMaxLineBytes {
		what = "line"
	}
	size := "more than " + strconv.FormatInt(e.Limit, 10) + " bytes"
	if e.Size > 0 {
		size = strconv.FormatInt(e.Size, 10) + " bytes"
	}
	return fmt.Sprintf("%s of %s is over the limit of %d bytes: raise %s to read it", what, size, e.Limit, e.Setting)
}

// Is makes errors.Is(err, ErrTooLarge) true.
func (e *TooLargeError) Is(target error) bool { return target == ErrTooLarge }

// LineError locates a problem on one line of a JSONL input. It unwraps to
// the problem, so errors.Is sees through it.
type LineError struct {
	// Name is the input's name as used in native ids: its path relative to
	// the walked directory, its base name, or the stdin name.
	Name string
	// Line is the 1-based line number.
	Line int
	// Err is the problem.
	Err error
}

// Error implements error.
func (e *LineError) Error() string { return fmt.Sprintf("%s:%d: %v", e.Name, e.Line, e.Err) }

// Unwrap returns the problem.
func (e *LineError) Unwrap() error { return e.Err }
