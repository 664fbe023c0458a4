package embedder

import (
	"bytes"
	"strconv"
	"sync"
	"sync/atomic"
	"unicode/utf8"
)

// bodyPool recycles request body buffers; a batch of chunks is tens to
// hundreds of kilobytes, encoded once per call.
var bodyPool = sync.Pool{New: func() any { return new([]byte) }}

// maxPooledBody keeps one huge batch from pinning memory in the pool.
const maxPooledBody = 8 << 20

// requestBody is a pooled request body. The transport closes a body once it
// has finished with it, even on errors and possibly after Do has returned,
// so Close — not the end of Embed — is where the buffer can safely go back
// to the pool. GetBody is never set, so nothing reads it after Close.
type requestBody struct {
	bytes.Reader
	buf    *[]byte
	closed atomic.Bool
}

func newRequestBody(model string, inputs []string, dims int, encoding string) *requestBody {
	buf := bodyPool.Get().(*[]byte)
	*buf = appendRequest((*buf)[:0], model, inputs, dims, encoding)
	b := &requestBody{buf: buf}
	b.Reset(*buf)
	return b
}

// Close returns the buffer to the pool, once.
func (b *requestBody) Close() error {
	if b.closed.CompareAndSwap(false, true) {
		if cap(*b.buf) <= maxPooledBody {
			bodyPool.Put(b.buf)
		}
	}
	return nil
}

// appendRequest appends the JSON request body for one Embed call.
func appendRequest(dst []byte, model string, inputs []string, dims int, encoding string) []byte {
	dst = append(dst, `{"model":`...)
	dst = appendJSONString(dst, model)
	dst = append(dst, `,"input":[`...)
	for i, in := range inputs {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendJSONString(dst, in)
	}
	dst = append(dst, ']')
	if dims > 0 {
		dst = append(dst, `,"dimensions":`...)
		dst = strconv.AppendInt(dst, int64(dims), 10)
	}
	dst = append(dst, `,"encoding_format":"`...)
	dst = append(dst, encoding...)
	return append(dst, `"}`...)
}

// appendJSONString appends s as a JSON string literal, escaping what JSON
// requires plus U+2028/U+2029, and replacing invalid UTF-8 with U+FFFD the
// way encoding/json does — without its reflection and allocations.
func appendJSONString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[r&0xf])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
