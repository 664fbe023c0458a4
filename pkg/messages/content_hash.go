package messages

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// ContentHash returns the lowercase hex SHA-256 that identifies a chunk's
// content: text and metadata, nothing else (not the document version, the
// run or the time). The store compares it to skip re-embedding content it
// already holds, so it depends only on meaning: metadata is canonicalised
// first (see CanonicalJSON), and absent, null and empty metadata all hash
// alike. Numbers are hashed as written, so 1 and 1.0 differ.
//
// The hashed bytes are the canonical JSON object
// {"metadata":<canonical metadata>,"text":<text>}.
//
// It fails, matching ErrInvalid, when text is not valid UTF-8 (matching
// ErrInvalidUTF8 too) or when metadata is not a JSON object.
func ContentHash(text string, metadata json.RawMessage) (string, error) {
	if !utf8.ValidString(text) {
		return "", &DecodeError{Field: "text", Reason: "is not valid UTF-8", Err: ErrInvalidUTF8}
	}
	meta, err := CanonicalJSON(metadata)
	if err != nil {
		return "", err
	}
	return contentHash(text, meta), nil
}

func contentHash(text string, canonicalMeta []byte) string {
	b := make([]byte, 0, len(`{"metadata":,"text":""}`)+len(canonicalMeta)+len(text)+16)
	b = append(b, `{"metadata":`...)
	b = append(b, canonicalMeta...)
	b = append(b, `,"text":`...)
	b = AppendJSONString(b, text)
	b = append(b, '}')
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// CanonicalJSON returns the canonical form of a metadata object: object keys
// sorted by their UTF-8 bytes at every depth, insignificant whitespace
// removed, strings escaped as encoding/json does without HTML escaping, and
// numbers kept exactly as written. Two inputs that differ only in key order
// or whitespace give identical bytes.
//
// Nil, empty, all-whitespace and null input give {} so that "no metadata"
// has one spelling. Anything else must be a JSON object; arrays, scalars,
// invalid JSON, duplicate keys (whose meaning JSON leaves undefined) and
// invalid UTF-8 are rejected with an error that matches ErrInvalid.
func CanonicalJSON(raw json.RawMessage) (json.RawMessage, error) {
	trimmed := bytes.Trim(raw, " \t\r\n")
	if len(trimmed) == 0 || string(trimmed) == "null" {
		return json.RawMessage("{}"), nil
	}
	if err := checkEncoding(trimmed); err != nil {
		e := err.(*DecodeError)
		e.Field = "metadata"
		return nil, e
	}
	// json.Valid also bounds the nesting depth, which keeps the recursion
	// below shallow.
	if !json.Valid(trimmed) {
		var v any
		err := json.Unmarshal(trimmed, &v)
		return nil, &DecodeError{Field: "metadata", Reason: "not valid JSON: " + errText(err), Err: err}
	}
	if trimmed[0] != '{' {
		return nil, invalid("metadata", "must be a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	dec.UseNumber()
	out, err := appendCanonical(nil, dec)
	if err != nil {
		return nil, err
	}
	return out, nil
}

func errText(err error) string {
	if err == nil {
		return "syntax error"
	}
	return err.Error()
}

type canonicalMember struct {
	key   string
	value []byte
}

func appendCanonical(dst []byte, dec *json.Decoder) ([]byte, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, &DecodeError{Field: "metadata", Reason: "not valid JSON: " + err.Error(), Err: err}
	}
	switch v := tok.(type) {
	case json.Delim:
		if v == '[' {
			return appendArray(dst, dec)
		}
		return appendObject(dst, dec)
	case string:
		return AppendJSONString(dst, v), nil
	case json.Number:
		return append(dst, v...), nil
	case bool:
		if v {
			return append(dst, "true"...), nil
		}
		return append(dst, "false"...), nil
	case nil:
		return append(dst, "null"...), nil
	}
	return nil, invalid("metadata", fmt.Sprintf("unexpected JSON token %T", tok))
}

func appendObject(dst []byte, dec *json.Decoder) ([]byte, error) {
	var members []canonicalMember
	seen := make(map[string]bool)
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, &DecodeError{Field: "metadata", Reason: "not valid JSON: " + err.Error(), Err: err}
		}
		key, _ := tok.(string)
		if seen[key] {
			return nil, invalid("metadata", fmt.Sprintf("key %q appears more than once in one object", displayKey(key)))
		}
		seen[key] = true
		value, err := appendCanonical(nil, dec)
		if err != nil {
			return nil, err
		}
		members = append(members, canonicalMember{key: key, value: value})
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return nil, &DecodeError{Field: "metadata", Reason: "not valid JSON: " + err.Error(), Err: err}
	}
	slices.SortFunc(members, func(a, b canonicalMember) int { return strings.Compare(a.key, b.key) })
	dst = append(dst, '{')
	for i, m := range members {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = AppendJSONString(dst, m.key)
		dst = append(dst, ':')
		dst = append(dst, m.value...)
	}
	return append(dst, '}'), nil
}

func appendArray(dst []byte, dec *json.Decoder) ([]byte, error) {
	dst = append(dst, '[')
	for i := 0; dec.More(); i++ {
		if i > 0 {
			dst = append(dst, ',')
		}
		var err error
		if dst, err = appendCanonical(dst, dec); err != nil {
			return nil, err
		}
	}
	if _, err := dec.Token(); err != nil { // the closing bracket
		return nil, &DecodeError{Field: "metadata", Reason: "not valid JSON: " + err.Error(), Err: err}
	}
	return append(dst, ']'), nil
}

// appendString writes s the way the envelope encoder does, so that a string
// has one spelling whether it sits in metadata, in the hash input or in the
// envelope itself.
// AppendJSONString appends s as a JSON string, escaped exactly as
// encoding/json escapes it without HTML escaping, and without its
// reflection and allocations: \" and \\, the short
// escapes \b \f \n \r \t, \u00XX for other control characters,
// \u2028 and \u2029, and \ufffd for invalid UTF-8. Runs of bytes that
// need no escape are copied whole.
func AppendJSONString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '"', '\\':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[b>>4], hex[b&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 || r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			switch r {
			case utf8.RuneError:
				dst = append(dst, `\ufffd`...)
			default:
				dst = append(dst, '\\', 'u', '2', '0', '2', hex[r&0xF])
			}
			start = i + size
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
