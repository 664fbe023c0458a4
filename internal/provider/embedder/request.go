package embedder

import (
	"bytes"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/sluicehq/sluice/pkg/messages"
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
	dst = messages.AppendJSONString(dst, model)
	dst = append(dst, `,"input":[`...)
	for i, in := range inputs {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = messages.AppendJSONString(dst, in)
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
