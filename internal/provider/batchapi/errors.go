package batchapi

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/sluicehq/sluice/pkg/classify"
)

// Sentinels that callers branch on with errors.Is.
var (
	// ErrNotFound matches an *APIError answered 404: the batch or file is
	// unknown to the provider, or was lost.
	ErrNotFound = errors.New("not found")
	// ErrFileFull is returned by Builder.Add when the request would take
	// the file past one of its limits. Nothing was written: seal the file
	// and add the request to the next one.
	ErrFileFull = errors.New("request file full")
	// ErrRequestTooLarge matches a *LimitError: the request alone exceeds
	// a limit, so it fits no file. Split it, or park its inputs.
	ErrRequestTooLarge = errors.New("request too large for a batch file")
	// ErrDuplicateCustomID is returned by Builder.Add for a custom_id the
	// file already holds.
	ErrDuplicateCustomID = errors.New("duplicate custom_id")
	// ErrMalformedLine matches a *LineError: a line of an output or error
	// file that is not a result line.
	ErrMalformedLine = errors.New("malformed result line")
	// ErrRequestExpired matches a *RequestError for a request the batch
	// did not run before its completion window closed (batch_expired).
	ErrRequestExpired = errors.New("request not run: batch expired")
	// ErrRequestCancelled matches a *RequestError for a request the batch
	// did not run because it was cancelled (batch_cancelled).
	ErrRequestCancelled = errors.New("request not run: batch cancelled")
)

// APIError is a non-2xx answer of the Batch or Files API. It unwraps to
// the *classify.StatusError that pkg/classify maps, and matches
// ErrNotFound for a 404.
type APIError struct {
	// Op is what was asked, such as "get batch batch_abc".
	Op string
	// Status is the provider's answer.
	Status *classify.StatusError
}

// Error implements error.
func (e *APIError) Error() string { return e.Op + ": " + e.Status.Error() }

// Unwrap returns the status error.
func (e *APIError) Unwrap() error { return e.Status }

// Is matches ErrNotFound for a 404.
func (e *APIError) Is(target error) bool {
	return target == ErrNotFound && e.Status.StatusCode == http.StatusNotFound
}

// LimitError says which limit a request exceeds on its own. It matches
// ErrRequestTooLarge.
type LimitError struct {
	// Limit names the limit: "requests", "inputs", "bytes", "tokens",
	// "inputs per request" or "tokens per request".
	Limit string
	// Value is the request's measure, Max the limit.
	Value, Max int64
}

// Error implements error.
func (e *LimitError) Error() string {
	return fmt.Sprintf("request of %d %s, over the limit of %d", e.Value, e.Limit, e.Max)
}

// Is matches ErrRequestTooLarge.
func (e *LimitError) Is(target error) bool { return target == ErrRequestTooLarge }

// LineError is a line of an output or error file that could not be read
// as a result. It matches ErrMalformedLine.
type LineError struct {
	// Line is the line's number in its file, from 1.
	Line int
	// Err says what is wrong.
	Err error
}

// Error implements error.
func (e *LineError) Error() string { return fmt.Sprintf("line %d: %v", e.Line, e.Err) }

// Unwrap returns the cause.
func (e *LineError) Unwrap() error { return e.Err }

// Is matches ErrMalformedLine.
func (e *LineError) Is(target error) bool { return target == ErrMalformedLine }

// Codes of a result line's error for a request that did not run.
const (
	// CodeExpired is the code of a request left over when a batch
	// expired.
	CodeExpired = "batch_expired"
	// CodeCancelled is the code of a request left over when a batch was
	// cancelled.
	CodeCancelled = "batch_cancelled"
)

// RequestError is a result line's top-level error: a request the batch
// did not send to the model, such as one left over when the batch expired.
// It matches ErrRequestExpired or ErrRequestCancelled by its code.
type RequestError struct {
	// Code is the provider's code, such as CodeExpired.
	Code string
	// Message is the provider's message, for logs.
	Message string
}

// Error implements error.
func (e *RequestError) Error() string { return e.Code + ": " + e.Message }

// Is matches the sentinel of the error's code.
func (e *RequestError) Is(target error) bool {
	switch target {
	case ErrRequestExpired:
		return e.Code == CodeExpired
	case ErrRequestCancelled:
		return e.Code == CodeCancelled
	}
	return false
}

// classified wraps a request that did not run in the classify error that
// says what to do with it. A request that never reached the model is not
// its inputs' fault: run it again. An expired one ran out of time
// (timeout); a cancelled one was stopped on purpose, which like a worker's
// shutdown must never park work (canceled). Any other code is one this
// client does not know: the classifier's ambiguous budget decides.
func (e *RequestError) classified() error {
	var class string
	switch e.Code {
	case CodeExpired:
		class = classify.ClassTimeout
	case CodeCancelled:
		class = classify.ClassCanceled
	default:
		return e
	}
	return &classify.Error{Disposition: classify.Retry, Class: class, Code: e.Code, Err: e}
}
