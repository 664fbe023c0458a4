package corpus

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"
)

// jsonl yields one document per non-blank line of r. Every line that is not
// a valid record is yielded as such, under the record's id when it could be
// read and is not taken, else under "<name>#L<line>". Blank lines carry no
// record and are passed over.
func (w *walk) jsonl(name string, r io.Reader) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var buf []byte
	for line := 1; ; line++ {
		data, size, err := readLine(br, buf[:0], w.cfg.MaxLineBytes)
		buf = data
		atEOF := errors.Is(err, io.EOF)
		if err != nil && !atEOF {
			return fmt.Errorf("corpus: read %s line %d: %w", name, line, err)
		}
		if atEOF && size == 0 {
			return nil
		}
		if line == 1 {
			data = bytes.TrimPrefix(data, bomUTF8)
		}
		if doc, ok := w.record(name, line, data, size); ok {
			if err := w.emit(doc); err != nil {
				return err
			}
		}
		if atEOF {
			return nil
		}
	}
}

// readLine reads one line into buf and returns it without its line ending,
// along with its full length. Past max bytes the line is only counted, so a
// runaway line costs no more memory than the limit; the caller sees it is
// too long from its size.
func readLine(br *bufio.Reader, buf []byte, limit int) ([]byte, int64, error) {
	var size int64
	for {
		frag, err := br.ReadSlice('\n')
		size += int64(len(frag))
		if size <= int64(limit)+2 {
			buf = append(buf, frag...)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if bytes.HasSuffix(frag, []byte("\n")) {
			size--
			buf = bytes.TrimSuffix(buf, []byte("\n"))
			if bytes.HasSuffix(buf, []byte("\r")) {
				size--
				buf = buf[:len(buf)-1]
			}
		}
		return buf, size, err
	}
}

// record turns one line into a document, or reports a blank line.
func (w *walk) record(name string, line int, data []byte, size int64) (Document, bool) {
	doc := Document{
		NativeID: fmt.Sprintf("%s#L%d", name, line),
		Metadata: map[string]any{},
		Status:   StatusInvalid,
		Size:     size,
	}
	fail := func(status Status, err error) (Document, bool) {
		doc.Status, doc.Err = status, &LineError{Name: name, Line: line, Err: err}
		return doc, true
	}
	if size > int64(w.cfg.MaxLineBytes) {
		return fail(StatusInvalid, &TooLargeError{Size: size, Limit: int64(w.cfg.MaxLineBytes), Setting: SettingMaxLineBytes})
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return doc, false
	}
	rec, err := parseRecord(data)
	if rec.id != "" {
		doc.NativeID = rec.id
	}
	doc.Codec = rec.codec
	switch {
	case errors.Is(err, ErrUndecodable):
		return fail(StatusUndecodable, err)
	case err != nil:
		return fail(StatusInvalid, err)
	}
	if rec.deleted {
		doc.Status, doc.Deleted = StatusDeleted, true
		return doc, true
	}
	if rec.metadata != nil {
		doc.Metadata = rec.metadata
	}
	text := Normalize(rec.text)
	if err := checkBinary(len(text), func(i int) rune { return rune(text[i]) }, 0, 1); err != nil {
		return fail(StatusUndecodable, fmt.Errorf("text: %w", err))
	}
	doc = finish(doc, text)
	if doc.Err != nil {
		return fail(doc.Status, doc.Err)
	}
	return doc, true
}

// record is one parsed JSONL line.
type record struct {
	id       string
	deleted  bool
	text     string
	metadata map[string]any
	codec    string
}

// parseRecord parses a line strictly: one JSON object with a string "id", a
// string "text" and an optional object "metadata", nothing else, no field
// twice; or a tombstone, a string "id" and "deleted": true, nothing else
// ("deleted": false is an ordinary record). A lenient parser would let a misspelt field or a numeric id
// through and lose data without a trace. The returned record holds the id
// even when a later problem is reported, so the problem can be filed under
// it.
func parseRecord(data []byte) (record, error) {
	rec := record{codec: CodecUTF8}
	if !utf8.Valid(data) {
		// Legacy exporters write JSONL in Windows-1252 too; give the line
		// the same fallback a file gets.
		text, codec, err := Decode(data)
		if err != nil {
			return rec, err
		}
		data, rec.codec = []byte(text), codec
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if tok, err := dec.Token(); err != nil {
		return rec, invalidJSON(err)
	} else if tok != json.Delim('{') {
		return rec, invalid("the line is %s, not a JSON object", kindOfToken(tok))
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return rec, invalidJSON(err)
		}
		key, _ := tok.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return rec, invalidJSON(err)
		}
		if err := rec.set(key, raw, seen); err != nil {
			return rec, err
		}
	}
	if _, err := dec.Token(); err != nil {
		return rec, invalidJSON(err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return rec, invalid("unexpected data after the record's closing brace")
	}
	switch {
	case !seen["id"]:
		return rec, invalid("id is missing")
	case rec.id == "":
		return rec, invalid("id is empty")
	case rec.deleted && (seen["text"] || seen["metadata"]):
		return rec, invalid("a deleted record has only id and deleted, no text or metadata")
	case !seen["text"] && !rec.deleted:
		return rec, invalid("text is missing")
	}
	return rec, nil
}

// set decodes the record's field key from raw; seen holds the fields
// already set, none of which may appear twice.
func (rec *record) set(key string, raw json.RawMessage, seen map[string]bool) error {
	switch key {
	case "id", "text", "metadata", "deleted":
	default:
		return invalid("unknown field %q: a record has only id, text and metadata, or id and deleted", key)
	}
	if seen[key] {
		return invalid("field %q appears twice", key)
	}
	seen[key] = true
	switch key {
	case "id":
		return decodeString(raw, "id", &rec.id)
	case "text":
		return decodeString(raw, "text", &rec.text)
	case "deleted":
		if kind := kindOfJSON(raw); kind != "a boolean" {
			return invalid("deleted must be a boolean, not %s", kind)
		}
		return json.Unmarshal(raw, &rec.deleted)
	default:
		return decodeMetadata(raw, &rec.metadata)
	}
}

func decodeString(raw json.RawMessage, field string, dst *string) error {
	if kind := kindOfJSON(raw); kind != "a string" {
		return invalid("%s must be a string, not %s", field, kind)
	}
	if err := json.Unmarshal(raw, dst); err != nil {
		return invalidJSON(err)
	}
	return nil
}

func decodeMetadata(raw json.RawMessage, dst *map[string]any) error {
	switch kind := kindOfJSON(raw); kind {
	case "null":
		return nil
	case "an object":
	default:
		return invalid("metadata must be an object, not %s", kind)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(dst); err != nil {
		return invalidJSON(err)
	}
	return nil
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidRecord, fmt.Sprintf(format, args...))
}

func invalidJSON(err error) error {
	var syntax *json.SyntaxError
	if errors.As(err, &syntax) {
		return fmt.Errorf("%w: invalid JSON at byte %d: %w", ErrInvalidRecord, syntax.Offset, err)
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("%w: invalid JSON: the line ends inside the record", ErrInvalidRecord)
	}
	return fmt.Errorf("%w: invalid JSON: %w", ErrInvalidRecord, err)
}

func kindOfJSON(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "empty"
	}
	switch raw[0] {
	case '"':
		return "a string"
	case '{':
		return "an object"
	case '[':
		return "an array"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

func kindOfToken(tok json.Token) string {
	switch tok.(type) {
	case json.Delim:
		return "an array"
	case string:
		return "a string"
	case json.Number, float64:
		return "a number"
	case bool:
		return "a boolean"
	case nil:
		return "null"
	}
	return "not an object"
}
