package extract

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/sluicehq/sluice/pkg/classify"
)

// ErrToolMissing reports that an extraction tool (pdfinfo, pdftotext,
// pdftoppm, tesseract, prlimit) or an OCR language is not installed: a
// fault of the deployment, not of the file, so it is not an *Error. The
// reader parks the file as extract_tool_missing with its bytes kept, to
// be replayed once poppler-utils, tesseract-ocr with its language data
// or util-linux is installed (make extract-tools).
var ErrToolMissing = errors.New("extraction tool missing")

// Error is an extraction failure. Its Class is one of classify's extraction
// classes, and classify.Classify gives it that class's disposition. The
// caller adds the file's identity when it wraps it.
type Error struct {
	// Class is a classify class: encrypted, corrupt, no_text_layer,
	// unsupported_format, extract_timeout, extract_memory, too_large,
	// missing_required_field, invalid_record or
	// ocr_low_confidence.
	Class string
	// Page is the 1-based PDF page or slide concerned, 0 if none.
	Page int
	// Row is the 1-based record or spreadsheet row concerned, 0 if none.
	Row int
	// Field is the record field concerned, empty if none.
	Field string
	// Detail says what was found, for the operator.
	Detail string
	// OCR lists, for ocr_low_confidence, the pages below the bar with
	// their scores; nil otherwise.
	OCR []PageOCR
	// Scanned lists, for ocr_low_confidence, every page OCR read, with
	// its score and time; nil otherwise.
	Scanned []PageOCR
	// Recognised is, for ocr_low_confidence, the text OCR read from each
	// page, kept with the parked file so that a person keying its text
	// in edits it rather than typing from nothing; nil otherwise.
	Recognised []Section
	// Err is the underlying cause, nil if none.
	Err error
}

var _ error = (*Error)(nil)

// Error implements error: "class: page 3: row 7: field "id": detail: cause".
func (e *Error) Error() string {
	msg := e.Class
	if e.Page > 0 {
		msg += ": page " + strconv.Itoa(e.Page)
	}
	if e.Row > 0 {
		msg += ": row " + strconv.Itoa(e.Row)
	}
	if e.Field != "" {
		msg += fmt.Sprintf(": field %q", e.Field)
	}
	if e.Detail != "" {
		msg += ": " + e.Detail
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Unwrap returns the classified form of the error, which classify.Classify
// reads, and the cause.
func (e *Error) Unwrap() []error {
	return []error{classify.Extraction(e.Class, nil), e.Err}
}

// failf returns an *Error of the given class with a formatted detail.
func failf(class, format string, args ...any) *Error {
	return &Error{Class: class, Detail: fmt.Sprintf(format, args...)}
}

// wrapf returns an *Error of the given class with a cause.
func wrapf(class string, err error, format string, args ...any) *Error {
	return &Error{Class: class, Detail: fmt.Sprintf(format, args...), Err: err}
}

// atPage sets the page of an *Error that has none.
func atPage(err error, page int) error {
	if e, ok := errors.AsType[*Error](err); ok && e.Page == 0 {
		e.Page = page
	}
	return err
}
