package messages

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"slices"
	"time"
	"unicode/utf8"
)

// Size limits, checked before any parsing so that a hostile or runaway
// message costs no more than a length comparison.
const (
	// MaxMessageBytes caps an encoded ChunkJob. It sits below NATS's
	// default max_payload of 1 MiB, which the INGEST stream's MaxMsgSize
	// matches, leaving room for headers: a job that encodes is a job the
	// stream accepts. A producer parks anything larger as too_large.
	MaxMessageBytes = 960 << 10
	// MaxDeadLetterBytes caps an encoded DeadLetter. It leaves room for a
	// MaxMessageBytes payload after base64 (a third larger) plus every other
	// field at its limit. The DLQ stream's MaxMsgSize, and the server's
	// max_payload (which also counts headers), must be above it.
	MaxDeadLetterBytes = 6 << 20
)

// Field limits. They keep every value storable as it is in Postgres (no NUL
// in text or jsonb) and every id usable inside a Nats-Msg-Id or a subject.
const (
	maxIDLen         = 128  // doc_id, dead_letter_id, run_id, replay_id
	maxSourceIDLen   = 64   // a subject token
	maxNativeIDBytes = 4096 // a path or URL in the source system
	// MaxMetadataBytes caps a document's canonical metadata, which every
	// chunk job of the document carries.
	MaxMetadataBytes = 64 << 10
	maxTokenLen      = 64 // codec, error_class, error_code, stage
	maxInt32         = math.MaxInt32
)

// field is one known member of an envelope: its key, where to decode it
// (a pointer to a pointer, or to a json.RawMessage), what it must be, for
// the error message, and whether it must be present and not null.
type field struct {
	key      string
	ptr      any
	want     string
	required bool
}

// What a member must be, for error messages.
const (
	wantInt       = "an integer"
	wantString    = "a string"
	wantTimestamp = "an RFC 3339 timestamp string"
)

// member is one member of a top-level object: its key, its value as
// written, and, when the value is a string the fast path read, the
// string it encodes.
type member struct {
	key    string
	value  json.RawMessage
	text   string
	isText bool
}

// unversioned, as readObject's schema, reads a form written before its
// envelope had a schema member; its fields then have no "schema".
const unversioned = 0

// readObject is the strict front half of every Decode function. It checks
// size and encoding on the raw bytes, splits the top-level object, rejects
// duplicate, unknown or case-mismatched keys (encoding/json alone would
// accept all three), checks the schema version before anything else that
// a newer version might legitimately change, decodes each member into
// its target, and names the first required field (in the order of fields)
// that is missing or null.
func readObject(data []byte, limit, schema int, fields []field) error {
	if len(data) > limit {
		return &DecodeError{
			Reason: fmt.Sprintf("message is %d bytes, over the %d-byte limit", len(data), limit),
			Err:    ErrOversize,
		}
	}
	members, err := readMembers(data, fields)
	if err != nil {
		return err
	}
	if schema != unversioned {
		if err := checkSchema(members, schema); err != nil {
			return err
		}
	}
	for _, m := range members {
		k := slices.IndexFunc(fields, func(f field) bool { return f.key == m.key })
		if k < 0 {
			return invalid(displayKey(m.key), fmt.Sprintf("unknown field; schema %d has no such field", schema))
		}
		if err := decodeValue(m, fields[k].ptr); err != nil {
			return &DecodeError{Field: m.key, Reason: "must be " + fields[k].want, Err: err}
		}
	}
	for _, f := range fields {
		if f.required && reflect.ValueOf(f.ptr).Elem().IsNil() {
			return missing(f.key)
		}
	}
	return nil
}

// readMembers splits the top-level object of data into its members, in
// order, rejecting a key given twice; fields are the keys expected. The fast path (scanObject) reads
// every well-formed message; what it does not accept is checked for its
// encoding, then split by encoding/json, which says what is wrong with
// it.
func readMembers(data []byte, fields []field) ([]member, error) {
	members, ok := scanObject(data, fields)
	if !ok {
		if err := checkEncoding(data); err != nil {
			return nil, err
		}
		return splitObject(data)
	}
	for i, m := range members {
		for _, earlier := range members[:i] {
			if earlier.key == m.key {
				return nil, invalid(displayKey(m.key), "field appears more than once")
			}
		}
	}
	return members, nil
}

// splitObject splits the top-level object of data into its members, in
// order, with encoding/json.
func splitObject(data []byte) ([]member, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	tok, err := dec.Token()
	if errors.Is(err, io.EOF) {
		return nil, invalid("", "message is empty")
	}
	if err != nil {
		return nil, syntaxError(err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, invalid("", "message must be a JSON object")
	}
	var members []member
	seen := make(map[string]bool)
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, syntaxError(err)
		}
		key, _ := tok.(string) // inside an object the decoder yields only string keys
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			return nil, syntaxError(err)
		}
		if seen[key] {
			return nil, invalid(displayKey(key), "field appears more than once")
		}
		seen[key] = true
		members = append(members, member{key: key, value: value})
	}
	if _, err := dec.Token(); err != nil {
		return nil, syntaxError(err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, invalid("", "unexpected data after the JSON object")
	}
	return members, nil
}

func checkSchema(members []member, want int) error {
	for _, m := range members {
		if m.key != "schema" {
			continue
		}
		var v *int
		if err := decodeValue(m, &v); err != nil {
			return &DecodeError{Field: "schema", Reason: "must be an integer", Err: err}
		}
		if v == nil {
			break
		}
		if *v != want {
			return &DecodeError{
				Field:  "schema",
				Reason: fmt.Sprintf("version %d is not supported (supported: %d)", *v, want),
				Err:    ErrUnknownSchema,
			}
		}
		return nil
	}
	return missing("schema")
}

func syntaxError(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return &DecodeError{Reason: "not valid JSON: unexpected end of input", Err: err}
	}
	return &DecodeError{Reason: "not valid JSON: " + err.Error(), Err: err}
}

// displayKey keeps an attacker-chosen key from flooding an error message.
func displayKey(key string) string {
	const limit = 64
	if len(key) <= limit {
		return key
	}
	cut := limit
	for cut > 0 && !utf8.RuneStart(key[cut]) {
		cut--
	}
	return key[:cut] + "…"
}

// checkEncoding rejects invalid UTF-8 anywhere in data, and \u escapes that
// encode a lone UTF-16 surrogate. encoding/json would silently turn either
// into U+FFFD, so a corrupted message would decode "successfully" into text
// that differs from what the producer hashed and sent.
func checkEncoding(data []byte) error {
	if !utf8.Valid(data) {
		off := 0
		for off < len(data) {
			r, size := utf8.DecodeRune(data[off:])
			if r == utf8.RuneError && size <= 1 {
				break
			}
			off += size
		}
		return &DecodeError{
			Reason: fmt.Sprintf("invalid UTF-8 at byte offset %d", off),
			Err:    ErrInvalidUTF8,
		}
	}
	inString := false
	for i := 0; i < len(data); i++ {
		switch c := data[i]; {
		case c == '"':
			inString = !inString
		case c == '\\' && inString:
			if i+1 >= len(data) {
				return nil // truncated; the parser reports it
			}
			if data[i+1] != 'u' {
				i++
				continue
			}
			r, ok := hex4(data, i+2)
			if !ok {
				i++
				continue
			}
			switch {
			case r >= 0xD800 && r < 0xDC00:
				lo, ok := -1, false
				if i+7 < len(data) && data[i+6] == '\\' && data[i+7] == 'u' {
					lo, ok = hex4(data, i+8)
				}
				if !ok || lo < 0xDC00 || lo > 0xDFFF {
					return loneSurrogate(i)
				}
				i += 11
			case r >= 0xDC00 && r <= 0xDFFF:
				return loneSurrogate(i)
			default:
				i += 5
			}
		}
	}
	return nil
}

func loneSurrogate(off int) error {
	return &DecodeError{
		Reason: fmt.Sprintf("escape at byte offset %d encodes a lone UTF-16 surrogate, which is not valid UTF-8", off),
		Err:    ErrInvalidUTF8,
	}
}

func hex4(data []byte, at int) (int, bool) {
	if at+4 > len(data) {
		return 0, false
	}
	v := 0
	for _, c := range data[at : at+4] {
		switch {
		case '0' <= c && c <= '9':
			v = v<<4 | int(c-'0')
		case 'a' <= c && c <= 'f':
			v = v<<4 | int(c-'a'+10)
		case 'A' <= c && c <= 'F':
			v = v<<4 | int(c-'A'+10)
		default:
			return 0, false
		}
	}
	return v, true
}

// marshal encodes v without HTML escaping: the envelopes are never embedded
// in HTML, and escaping <, > and & would make the bytes differ from what any
// other canonical writer produces.
func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte{'\n'}), nil
}

func checkSize(out []byte, limit int) error {
	if len(out) > limit {
		return &DecodeError{
			Reason: fmt.Sprintf("encoded message is %d bytes, over the %d-byte limit", len(out), limit),
			Err:    ErrOversize,
		}
	}
	return nil
}

func deref[T any](p *T) T {
	if p == nil {
		var zero T
		return zero
	}
	return *p
}

func formatTime(t time.Time) string {
	return t.UTC().Format(time.RFC3339Nano)
}
