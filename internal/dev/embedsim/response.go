package embedsim

import (
	"encoding/base64"
	"encoding/binary"
	"math"
	"net/http"
	"strconv"
	"sync"

	"github.com/sluicehq/sluice/pkg/messages"
)

// responsePool holds reply buffers; a reply is rebuilt for every request on
// the benchmark path, so its buffers are reused rather than reallocated.
var responsePool = sync.Pool{New: func() any { return new(responseBuf) }}

type responseBuf struct {
	out []byte
	vec []float32
	raw []byte
}

// maxPooledBytes keeps one huge reply from pinning memory in the pool.
const maxPooledBytes = 4 << 20

func (s *Server) writeEmbeddings(w http.ResponseWriter, model string, inputs []string, tokens, dims int, b64 bool, poison []PoisonKind) {
	rb := responsePool.Get().(*responseBuf)
	defer func() {
		if cap(rb.out) <= maxPooledBytes {
			responsePool.Put(rb)
		}
	}()
	out := append(rb.appendEmbeddings(rb.out[:0], model, inputs, tokens, dims, b64, poison), '\n')
	rb.out = out

	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(out)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(out)
}

// appendEmbeddings appends the body of a successful embeddings answer, as
// the live endpoint sends it and as a batch's output line carries it.
// poison holds one PoisonKind per input, or is nil.
func (rb *responseBuf) appendEmbeddings(out []byte, model string, inputs []string, tokens, dims int, b64 bool, poison []PoisonKind) []byte {
	out = append(out, `{"object":"list","data":[`...)
	for i, in := range inputs {
		n := dims
		kind := PoisonKind("")
		if poison != nil {
			kind = poison[i]
		}
		if kind == PoisonWrongDims {
			n = dims + 1
		}
		rb.vec = resize(rb.vec, n)
		EmbedInto(rb.vec, in)
		if kind == PoisonNaN {
			rb.vec[0] = float32(math.NaN())
		}
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, `{"object":"embedding","index":`...)
		out = strconv.AppendInt(out, int64(i), 10)
		out = append(out, `,"embedding":`...)
		if b64 {
			out, rb.raw = appendBase64(out, rb.raw, rb.vec)
		} else {
			out = appendFloats(out, rb.vec)
		}
		out = append(out, '}')
	}
	out = append(out, `],"model":`...)
	out = messages.AppendJSONString(out, model)
	out = append(out, `,"usage":{"prompt_tokens":`...)
	out = strconv.AppendInt(out, int64(tokens), 10)
	out = append(out, `,"total_tokens":`...)
	out = strconv.AppendInt(out, int64(tokens), 10)
	return append(out, "}}"...)
}

func resize(v []float32, n int) []float32 {
	if cap(v) < n {
		return make([]float32, n)
	}
	return v[:n]
}

// appendBase64 appends the vector as a JSON string holding the base64 of its
// little-endian float32 bytes, the provider's encoding_format=base64.
func appendBase64(out, raw []byte, vec []float32) ([]byte, []byte) {
	raw = raw[:0]
	for _, x := range vec {
		raw = binary.LittleEndian.AppendUint32(raw, math.Float32bits(x))
	}
	out = append(out, '"')
	out = base64.StdEncoding.AppendEncode(out, raw)
	return append(out, '"'), raw
}

// appendFloats appends the vector as a JSON array. NaN and infinities are
// written as the bare literals NaN and Infinity, as Python-based servers do;
// strict JSON parsers reject them, which is part of what a NaN poison tests.
func appendFloats(out []byte, vec []float32) []byte {
	out = append(out, '[')
	for i, x := range vec {
		if i > 0 {
			out = append(out, ',')
		}
		switch {
		case math.IsNaN(float64(x)):
			out = append(out, "NaN"...)
		case math.IsInf(float64(x), 1):
			out = append(out, "Infinity"...)
		case math.IsInf(float64(x), -1):
			out = append(out, "-Infinity"...)
		default:
			out = strconv.AppendFloat(out, float64(x), 'g', -1, 32)
		}
	}
	return append(out, ']')
}
