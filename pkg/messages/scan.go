package messages

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"time"
)

// The fast path of readObject. A message is checked once with json.Valid,
// which allocates nothing; a valid one is then split by hand, and its
// plain strings and integers are read without encoding/json. Anything
// unusual (an escape, an exponent, a value out of range, invalid JSON)
// goes to encoding/json, so every error reads exactly as before. Chunk
// jobs are decoded once per delivery: this was a quarter of a consumer's
// CPU.

// splitValid splits the top-level object of data, which json.Valid
// accepted, into its members in order, rejecting a key given twice.
func splitValid(data []byte) ([]member, error) {
	i := skipSpace(data, 0)
	if data[i] != '{' {
		return nil, invalid("", "message must be a JSON object")
	}
	members := make([]member, 0, 16)
	i = skipSpace(data, i+1)
	for data[i] != '}' {
		end := stringEnd(data, i)
		key, err := unquote(data[i:end])
		if err != nil {
			return nil, syntaxError(err)
		}
		for _, m := range members {
			if m.key == key {
				return nil, invalid(displayKey(key), "field appears more than once")
			}
		}
		i = skipSpace(data, skipSpace(data, end)+1) // past the colon
		end = valueEnd(data, i)
		members = append(members, member{key: key, value: data[i:end]})
		if i = skipSpace(data, end); data[i] == ',' {
			i = skipSpace(data, i+1)
		}
	}
	return members, nil
}

func skipSpace(data []byte, i int) int {
	for i < len(data) && (data[i] == ' ' || data[i] == '\t' || data[i] == '\n' || data[i] == '\r') {
		i++
	}
	return i
}

// stringEnd returns the offset just past the string that starts at i.
func stringEnd(data []byte, i int) int {
	for i++; data[i] != '"'; i++ {
		if data[i] == '\\' {
			i++
		}
	}
	return i + 1
}

// valueEnd returns the offset just past the value that starts at i.
func valueEnd(data []byte, i int) int {
	switch data[i] {
	case '"':
		return stringEnd(data, i)
	case '{', '[':
		depth := 0
		for ; ; i++ {
			switch data[i] {
			case '"':
				i = stringEnd(data, i) - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
		}
	}
	for i < len(data) && strings.IndexByte(",}] \t\r\n", data[i]) < 0 {
		i++
	}
	return i
}

// unquote returns the string a JSON string literal encodes.
func unquote(lit []byte) (string, error) {
	if bytes.IndexByte(lit, '\\') < 0 {
		return string(lit[1 : len(lit)-1]), nil
	}
	var s string
	err := json.Unmarshal(lit, &s)
	return s, err
}

// decodeValue decodes one member's value into ptr, as json.Unmarshal
// would.
func decodeValue(value []byte, ptr any) error {
	if string(value) == "null" {
		return json.Unmarshal(value, ptr)
	}
	switch p := ptr.(type) {
	case **string:
		if value[0] == '"' && bytes.IndexByte(value, '\\') < 0 {
			s := string(value[1 : len(value)-1])
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
