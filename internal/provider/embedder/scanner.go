package embedder

import "bytes"

// scanner walks JSON text without building values. It is lenient where
// leniency is harmless (it accepts NaN and Infinity as scalars, and does not
// validate number syntax or skipped scalars), and strict about structure.
type scanner struct {
	b []byte
	i int
}

// peek skips whitespace and returns the next byte, or 0 at the end.
func (s *scanner) peek() byte {
	for s.i < len(s.b) {
		switch c := s.b[s.i]; c {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return c
		}
	}
	return 0
}

func (s *scanner) expect(c byte) error {
	if s.peek() != c {
		return s.unexpected(string(c))
	}
	s.i++
	return nil
}

func (s *scanner) unexpected(want string) error {
	if s.i >= len(s.b) {
		return malformed("unexpected end of reply, want %s", want)
	}
	return malformed("unexpected %q at offset %d, want %s", s.b[s.i], s.i, want)
}

// object calls field for each key, positioned at the key's value; field
// must consume the value.
func (s *scanner) object(field func(key []byte) error) error {
	if err := s.expect('{'); err != nil {
		return err
	}
	if s.peek() == '}' {
		s.i++
		return nil
	}
	for {
		if s.peek() != '"' {
			return s.unexpected("a key")
		}
		_, key, _, err := s.str()
		if err != nil {
			return err
		}
		if err := s.expect(':'); err != nil {
			return err
		}
		if err := field(key); err != nil {
			return err
		}
		switch s.peek() {
		case ',':
			s.i++
		case '}':
			s.i++
			return nil
		default:
			return s.unexpected(`"," or "}"`)
		}
	}
}

// array calls elem for each element, positioned at it; elem must consume
// the element.
func (s *scanner) array(elem func() error) error {
	if err := s.expect('['); err != nil {
		return err
	}
	if s.peek() == ']' {
		s.i++
		return nil
	}
	for {
		if err := elem(); err != nil {
			return err
		}
		switch s.peek() {
		case ',':
			s.i++
		case ']':
			s.i++
			return nil
		default:
			return s.unexpected(`"," or "]"`)
		}
	}
}

// str consumes a string and returns the whole literal, its raw content
// between the quotes, and whether that content holds escapes.
func (s *scanner) str() (lit, content []byte, escaped bool, err error) {
	if err := s.expect('"'); err != nil {
		return nil, nil, false, err
	}
	start := s.i
	// Fast path: base64 vectors are long and escape-free, and IndexByte is
	// vectorised.
	if end := bytes.IndexByte(s.b[start:], '"'); end >= 0 && bytes.IndexByte(s.b[start:start+end], '\\') < 0 {
		s.i = start + end + 1
		return s.b[start-1 : s.i], s.b[start : s.i-1], false, nil
	}
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case '\\':
			escaped = true
			s.i += 2
		case '"':
			s.i++
			return s.b[start-1 : s.i], s.b[start : s.i-1], escaped, nil
		default:
			s.i++
		}
	}
	return nil, nil, false, malformed("unterminated string at offset %d", start-1)
}

// token consumes a scalar (number, true, false, null, NaN, Infinity) and
// returns it; it is empty if the next value is not a scalar.
func (s *scanner) token() []byte {
	s.peek()
	start := s.i
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r', ',', ':', '[', ']', '{', '}', '"':
			return s.b[start:s.i]
		}
		s.i++
	}
	return s.b[start:s.i]
}

// maxSkipDepth bounds the nesting skip will follow, so that a hostile reply
// cannot exhaust the stack.
const maxSkipDepth = 64

// skip consumes one value of any kind.
func (s *scanner) skip() error { return s.skipDepth(0) }

func (s *scanner) skipDepth(depth int) error {
	if depth > maxSkipDepth {
		return malformed("nesting deeper than %d at offset %d", maxSkipDepth, s.i)
	}
	switch s.peek() {
	case '{':
		return s.object(func([]byte) error { return s.skipDepth(depth + 1) })
	case '[':
		return s.array(func() error { return s.skipDepth(depth + 1) })
	case '"':
		_, _, _, err := s.str()
		return err
	}
	if len(s.token()) == 0 {
		return s.unexpected("a value")
	}
	return nil
}
