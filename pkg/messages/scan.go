package messages

import (
	"bytes"
	"encoding/json"
	"strconv"
	"time"
	"unicode/utf8"
)

// The fast path of readObject. A message is read once, byte by byte: the
// one pass checks its syntax and its encoding (UTF-8, no lone surrogate
// escape), splits the top-level object into members and decodes every
// string member as it goes; integers and timestamps are then read from
// their few bytes. Anything the pass does not accept (invalid JSON,
// invalid encoding, nesting past maxFastDepth) is read again by the slow
// path (checkEncoding, then encoding/json), so every rejection reads
// exactly as it always has. Chunk jobs are decoded once per delivery:
// three passes over each (json.Valid, the split, then encoding/json again
// for every string with an escape) were the bulk of decoding.

// maxFastDepth is the deepest nesting the fast path reads; deeper
// values, which no metadata of ours has, take the slow path and its
// limit.
const maxFastDepth = 64

// scanner is one pass over a message.
type scanner struct {
	data []byte
	i    int
	// buf collects a string with escapes as it is decoded.
	buf []byte
}

// scanObject splits data, a top-level JSON object, into its members in
// order, each string member decoded; a key that is one of fields' is
// that field's string, not a copy. It reports false, having read no
// further, when data is not one valid JSON object in valid UTF-8 without
// lone surrogate escapes.
func scanObject(data []byte, fields []field) ([]member, bool) {
	s := scanner{data: data}
	s.space()
	if !s.take('{') {
		return nil, false
	}
	members := make([]member, 0, 16)
	s.space()
	if s.take('}') {
		return members, s.end()
	}
	for {
		key, ok := s.key(fields)
		if !ok {
			return nil, false
		}
		s.space()
		if !s.take(':') {
			return nil, false
		}
		s.space()
		m := member{key: key}
		start := s.i
		if s.i < len(data) && data[s.i] == '"' {
			if m.text, ok = s.str(true); !ok {
				return nil, false
			}
			m.isText = true
		} else if !s.value(0) {
			return nil, false
		}
		m.value = data[start:s.i]
		members = append(members, m)
		s.space()
		if s.take('}') {
			return members, s.end()
		}
		if !s.take(',') {
			return nil, false
		}
		s.space()
	}
}

// end reports whether nothing but white space is left.
func (s *scanner) end() bool {
	s.space()
	return s.i == len(s.data)
}

func (s *scanner) take(c byte) bool {
	if s.i < len(s.data) && s.data[s.i] == c {
		s.i++
		return true
	}
	return false
}

func (s *scanner) space() {
	for s.i < len(s.data) {
		switch s.data[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// value reads any JSON value, decoding none of its strings.
func (s *scanner) value(depth int) bool {
	if s.i >= len(s.data) || depth > maxFastDepth {
		return false
	}
	switch c := s.data[s.i]; {
	case c == '"':
		_, ok := s.str(false)
		return ok
	case c == '{' || c == '[':
		return s.composite(depth)
	case c == '-' || '0' <= c && c <= '9':
		return s.number()
	default:
		return s.literal("true") || s.literal("false") || s.literal("null")
	}
}

// composite reads an object or an array.
func (s *scanner) composite(depth int) bool {
	object := s.data[s.i] == '{'
	closing := byte(']')
	if object {
		closing = '}'
	}
	s.i++
	s.space()
	if s.take(closing) {
		return true
	}
	for {
		if object {
			if _, ok := s.str(false); !ok {
				return false
			}
			s.space()
			if !s.take(':') {
				return false
			}
			s.space()
		}
		if !s.value(depth + 1) {
			return false
		}
		s.space()
		if s.take(closing) {
			return true
		}
		if !s.take(',') {
			return false
		}
		s.space()
	}
}

func (s *scanner) literal(lit string) bool {
	if bytes.HasPrefix(s.data[s.i:], []byte(lit)) {
		s.i += len(lit)
		return true
	}
	return false
}

// number reads -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?.
func (s *scanner) number() bool {
	s.take('-')
	if s.take('0') {
		// no more integer digits after a leading zero
	} else if !s.digits() {
		return false
	}
	if s.take('.') && !s.digits() {
		return false
	}
	if s.take('e') || s.take('E') {
		if !s.take('+') {
			s.take('-')
		}
		return s.digits()
	}
	return true
}

func (s *scanner) digits() bool {
	start := s.i
	for s.i < len(s.data) && '0' <= s.data[s.i] && s.data[s.i] <= '9' {
		s.i++
	}
	return s.i > start
}

// key reads a member's key: a known field's name without escapes is
// that name.
func (s *scanner) key(fields []field) (string, bool) {
	start := s.i
	if _, ok := s.str(false); !ok {
		return "", false
	}
	if lit := s.data[start+1 : s.i-1]; bytes.IndexByte(lit, '\\') < 0 {
		for _, f := range fields {
			if f.key == string(lit) {
				return f.key, true
			}
		}
	}
	s.i = start
	return s.str(true)
}

// str reads the string at s.i and, with keep, returns what it encodes.
func (s *scanner) str(keep bool) (string, bool) {
	if !s.take('"') {
		return "", false
	}
	start := s.i
	s.buf = s.buf[:0]
	escaped := false
	for s.i < len(s.data) {
		c := s.data[s.i]
		switch {
		case c == '"':
			out := s.data[start:s.i]
			s.i++
			if !keep {
				return "", true
			}
			if escaped {
				out = append(s.buf, out...)
			}
			return string(out), true
		case c == '\\':
			if s.buf == nil {
				// One buffer serves every string of the message: the
				// longest (the text) is most of it.
				s.buf = make([]byte, 0, len(s.data)-start)
			}
			s.buf = append(s.buf, s.data[start:s.i]...)
			if !s.escape() {
				return "", false
			}
			start, escaped = s.i, true
		case c < 0x20:
			return "", false
		case c < utf8.RuneSelf:
			s.i++
		default:
			r, size := utf8.DecodeRune(s.data[s.i:])
			if r == utf8.RuneError && size <= 1 {
				return "", false
			}
			s.i += size
		}
	}
	return "", false
}

// escape decodes the escape at s.i into s.buf; a lone surrogate is not
// accepted.
func (s *scanner) escape() bool {
	if s.i+1 >= len(s.data) {
		return false
	}
	c := s.data[s.i+1]
	s.i += 2
	switch c {
	case '"', '\\', '/':
		s.buf = append(s.buf, c)
	case 'b':
		s.buf = append(s.buf, '\b')
	case 'f':
		s.buf = append(s.buf, '\f')
	case 'n':
		s.buf = append(s.buf, '\n')
	case 'r':
		s.buf = append(s.buf, '\r')
	case 't':
		s.buf = append(s.buf, '\t')
	case 'u':
		r, ok := hex4(s.data, s.i)
		if !ok {
			return false
		}
		s.i += 4
		if r >= 0xD800 && r < 0xDC00 {
			if s.i+1 >= len(s.data) || s.data[s.i] != '\\' || s.data[s.i+1] != 'u' {
				return false
			}
			lo, ok := hex4(s.data, s.i+2)
			if !ok || lo < 0xDC00 || lo > 0xDFFF {
				return false
			}
			s.i += 6
			r = 0x10000 + (r-0xD800)<<10 + (lo - 0xDC00)
		} else if r >= 0xDC00 && r <= 0xDFFF {
			return false
		}
		s.buf = utf8.AppendRune(s.buf, rune(r))
	default:
		return false
	}
	return true
}

// decodeValue decodes one member's value into ptr, as json.Unmarshal
// would.
func decodeValue(m member, ptr any) error {
	value := m.value
	if string(value) == "null" {
		return json.Unmarshal(value, ptr)
	}
	switch p := ptr.(type) {
	case **string:
		if m.isText {
			s := m.text
			*p = &s
			return nil
		}
	case **int:
		if n, err := strconv.ParseInt(string(value), 10, strconv.IntSize); err == nil {
			v := int(n)
			*p = &v
			return nil
		}
	case **int64:
		if n, err := strconv.ParseInt(string(value), 10, 64); err == nil {
			*p = &n
			return nil
		}
	case *json.RawMessage:
		*p = append((*p)[:0], value...)
		return nil
	case **time.Time:
		t := new(time.Time)
		if value[0] == '"' && t.UnmarshalJSON(value) == nil {
			*p = t
			return nil
		}
	}
	return json.Unmarshal(value, ptr)
}
