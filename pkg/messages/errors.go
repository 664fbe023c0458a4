package messages

import "errors"

// Sentinel errors. Every error that DecodeChunkJob, DecodeDeadLetter, the
// Validate methods, the Encode methods and the parsers in this package return
// matches ErrInvalid; the others narrow it down for callers that treat some
// failures differently (for example, classify ErrInvalidUTF8 as an encoding
// fault and the rest as an invalid message).
var (
	// ErrInvalid matches every rejected message, whatever the reason.
	ErrInvalid = errors.New("messages: invalid message")
	// ErrUnknownSchema means the schema field names a version this build
	// does not read. The message may be fine for a newer reader.
	ErrUnknownSchema = errors.New("messages: unknown schema version")
	// ErrOversize means the message is over its size limit (MaxMessageBytes
	// or MaxDeadLetterBytes). Oversize input is rejected before parsing.
	ErrOversize = errors.New("messages: message too large")
	// ErrInvalidUTF8 means the message bytes, or a string escaped inside
	// them, are not valid UTF-8.
	ErrInvalidUTF8 = errors.New("messages: invalid UTF-8")
	// ErrMissingField means a required field is absent, null, or (on a Go
	// value being validated) zero.
	ErrMissingField = errors.New("messages: missing required field")
)

// DecodeError describes why a message was rejected. It matches ErrInvalid
// with errors.Is, and through Err it may also match one of the narrower
// sentinels or expose the underlying encoding/json error.
type DecodeError struct {
	// Field is the JSON name of the offending field, or empty when the
	// message as a whole is at fault (size, encoding, syntax).
	Field string
	// Reason says what is wrong in words meant for an operator.
	Reason string
	// Err is the cause, if any: one of ErrUnknownSchema, ErrOversize,
	// ErrInvalidUTF8, ErrMissingField, or an encoding/json error.
	Err error
}

// Error names the field, when there is one, and the reason.
func (e *DecodeError) Error() string {
	if e.Field == "" {
		return "messages: invalid message: " + e.Reason
	}
	return "messages: invalid field " + e.Field + ": " + e.Reason
}

// Is reports whether target is ErrInvalid, so that every DecodeError matches
// it whatever its cause.
func (e *DecodeError) Is(target error) bool { return target == ErrInvalid }

// Unwrap returns the cause.
func (e *DecodeError) Unwrap() error { return e.Err }

func invalid(field, reason string) error {
	return &DecodeError{Field: field, Reason: reason}
}

func missing(field string) error {
	return &DecodeError{Field: field, Reason: "required field is missing", Err: ErrMissingField}
}
