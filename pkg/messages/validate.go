package messages

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

func checkSchemaValue(got, want int, name string) error {
	switch got {
	case want:
		return nil
	case 0:
		return &DecodeError{
			Field:  "schema",
			Reason: "required field is missing; set it to " + name,
			Err:    ErrMissingField,
		}
	}
	return &DecodeError{
		Field:  "schema",
		Reason: fmt.Sprintf("version %d is not supported (supported: %d)", got, want),
		Err:    ErrUnknownSchema,
	}
}

func isIDByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		c == '_' || c == '-' || c == '.'
}

// checkID accepts the ids that appear inside a Nats-Msg-Id, where ':' is the
// separator.
func checkID(name, s string, required bool) error {
	if s == "" {
		if required {
			return missing(name)
		}
		return nil
	}
	if len(s) > maxIDLen {
		return invalid(name, fmt.Sprintf("is %d bytes long; the limit is %d", len(s), maxIDLen))
	}
	if i := indexFunc(s, isIDByte); i >= 0 {
		return invalid(name, badChar(s, i)+"; ids are made of A-Z a-z 0-9 . _ -")
	}
	return nil
}

// checkToken accepts printable ASCII without spaces: values that are
// labels (codec, error class, stage), not prose.
func checkToken(name, s string, maxLen int, required bool) error {
	if s == "" {
		if required {
			return missing(name)
		}
		return nil
	}
	if len(s) > maxLen {
		return invalid(name, fmt.Sprintf("is %d bytes long; the limit is %d", len(s), maxLen))
	}
	if i := indexFunc(s, func(c byte) bool { return c > ' ' && c < 0x7f }); i >= 0 {
		return invalid(name, badChar(s, i)+"; only printable ASCII without spaces is allowed")
	}
	return nil
}

// checkString accepts free text that Postgres can store: valid UTF-8 and no
// NUL.
func checkString(name, s string, maxBytes int) error {
	if len(s) > maxBytes {
		return invalid(name, fmt.Sprintf("is %d bytes long; the limit is %d", len(s), maxBytes))
	}
	if !utf8.ValidString(s) {
		return &DecodeError{Field: name, Reason: "is not valid UTF-8", Err: ErrInvalidUTF8}
	}
	if strings.IndexByte(s, 0) >= 0 {
		return invalid(name, "contains a NUL character, which Postgres text cannot store")
	}
	return nil
}

func checkTime(name string, t time.Time, required bool) error {
	if t.IsZero() {
		if required {
			return missing(name)
		}
		return nil
	}
	if y := t.UTC().Year(); y < 1 || y > 9999 {
		return invalid(name, fmt.Sprintf("year %d in UTC is outside the RFC 3339 range 0001-9999", y))
	}
	return nil
}

func checkRange(name string, v, lo, hi int64) error {
	if v < lo || v > hi {
		return invalid(name, fmt.Sprintf("is %d; it must be between %d and %d", v, lo, hi))
	}
	return nil
}

func checkMin(name string, v, lo int64) error {
	if v < lo {
		return invalid(name, fmt.Sprintf("is %d; it must be at least %d", v, lo))
	}
	return nil
}

// indexFunc returns the index of the first byte of s that ok rejects, or -1.
func indexFunc(s string, ok func(byte) bool) int {
	for i := 0; i < len(s); i++ {
		if !ok(s[i]) {
			return i
		}
	}
	return -1
}

func badChar(s string, i int) string {
	r, _ := utf8.DecodeRuneInString(s[i:])
	return fmt.Sprintf("invalid character %q at byte %d", r, i)
}
