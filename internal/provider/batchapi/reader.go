package batchapi

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/sluicehq/sluice/internal/provider/embedder"
	"github.com/sluicehq/sluice/pkg/classify"
)

// DefaultMaxLineBytes is the default ReaderConfig.MaxLineBytes: a request
// of 2048 inputs of 3072 dimensions in base64 is about 34 MB.
const DefaultMaxLineBytes = 64 << 20

// ReaderConfig configures a Reader.
type ReaderConfig struct {
	// Dims is the dimension every vector must have, as the live client
	// enforces it: a vector of another is the input's
	// classify.ClassDimensionMismatch. Defaults to 0: not checked.
	Dims int
	// MaxLineBytes bounds one line, and so the reader's memory; a longer
	// line stops the reader with an error. Defaults to
	// DefaultMaxLineBytes.
	MaxLineBytes int
}

// Result is one line of an output or error file: one request's answer.
type Result struct {
	// Line is the line's number in its file, from 1.
	Line int
	// ID is the provider's id of the request, such as "batch_req_abc".
	ID string
	// CustomID is the custom_id the request was built with: match
	// results by it, never by their order.
	CustomID string
	// StatusCode is the HTTP status the request was answered with, 0 for
	// a request that did not run.
	StatusCode int
	// RequestID is the provider's request id, for its support.
	RequestID string
	// Vectors are the request's embeddings in input order, when Err is
	// nil.
	Vectors [][]float32
	// PromptTokens is the input tokens the request used.
	PromptTokens int
	// Err is why the request failed, nil if it did not. It classifies
	// (classify.Classify) as the same failure would on the live
	// endpoint; see the package documentation.
	Err error
}

// Reader reads the results of an output or error file one line at a
// time. It is not safe for concurrent use.
type Reader struct {
	cfg  ReaderConfig
	br   *bufio.Reader
	buf  []byte
	line int
	err  error // sticky: the file cannot be read further
}

// NewReader returns a reader of the file r, such as FileContent's.
func NewReader(r io.Reader, cfg ReaderConfig) *Reader {
	if cfg.MaxLineBytes <= 0 {
		cfg.MaxLineBytes = DefaultMaxLineBytes
	}
	return &Reader{cfg: cfg, br: bufio.NewReaderSize(r, 64<<10)}
}

// Next returns the next result. At the end of the file it returns
// io.EOF.
//
// Errors: a *LineError matching ErrMalformedLine for a line that is not a
// result (the next call reads on); io.EOF; a read error or a line longer
// than MaxLineBytes, after which every call returns the same error.
func (r *Reader) Next() (Result, error) {
	for {
		if r.err != nil {
			return Result{}, r.err
		}
		raw, err := r.readLine()
		if err != nil {
			r.err = err
			continue
		}
		r.line++
		if len(bytes.TrimSpace(raw)) == 0 {
			continue
		}
		return r.parse(raw)
	}
}

// readLine returns the next line without its newline; the slice is valid
// until the next call.
func (r *Reader) readLine() ([]byte, error) {
	r.buf = r.buf[:0]
	for {
		chunk, err := r.br.ReadSlice('\n')
		if len(r.buf)+len(chunk) > r.cfg.MaxLineBytes {
			return nil, fmt.Errorf("line %d is longer than %d bytes: raise MaxLineBytes", r.line+1, r.cfg.MaxLineBytes)
		}
		switch {
		case err == nil:
			if len(r.buf) == 0 {
				return chunk[:len(chunk)-1], nil
			}
			r.buf = append(r.buf, chunk[:len(chunk)-1]...)
			return r.buf, nil
		case errors.Is(err, bufio.ErrBufferFull):
			r.buf = append(r.buf, chunk...)
		case errors.Is(err, io.EOF):
			r.buf = append(r.buf, chunk...)
			if len(r.buf) == 0 {
				return nil, io.EOF
			}
			return r.buf, nil
		default:
			return nil, fmt.Errorf("read batch file: %w", err)
		}
	}
}

// resultLine is the provider's line of an output or error file.
type resultLine struct {
	ID       string `json:"id"`
	CustomID string `json:"custom_id"`
	Response *struct {
		StatusCode int    `json:"status_code"`
		RequestID  string `json:"request_id"`
		// Body is read in the same pass as the line: an embeddings
		// answer, or an error body.
		Body struct {
			embeddingsBody
			errorObject
		} `json:"body"`
	} `json:"response"`
	Error *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func (r *Reader) parse(raw []byte) (Result, error) {
	var rl resultLine
	if err := json.Unmarshal(raw, &rl); err != nil {
		return Result{}, &LineError{Line: r.line, Err: err}
	}
	if rl.CustomID == "" {
		return Result{}, &LineError{Line: r.line, Err: errors.New("no custom_id")}
	}
	res := Result{Line: r.line, ID: rl.ID, CustomID: rl.CustomID}
	switch {
	case rl.Error != nil:
		res.Err = (&RequestError{Code: rl.Error.Code, Message: rl.Error.Message}).classified()
	case rl.Response == nil:
		return Result{}, &LineError{Line: r.line, Err: errors.New("neither a response nor an error")}
	case rl.Response.StatusCode < 200 || rl.Response.StatusCode > 299:
		res.StatusCode, res.RequestID = rl.Response.StatusCode, rl.Response.RequestID
		res.Err = lineStatusError(rl.Response.StatusCode, rl.Response.Body.errorObject)
	default:
		res.StatusCode, res.RequestID = rl.Response.StatusCode, rl.Response.RequestID
		res.Vectors, res.PromptTokens, res.Err = placeEmbeddings(&rl.Response.Body.embeddingsBody, r.cfg.Dims)
	}
	return res, nil
}

// lineStatusError is the error of a line answered with a non-2xx status:
// the *classify.StatusError the live endpoint's answer would give, inside
// an *embedder.InputError when a 400 names the input at fault.
func lineStatusError(status int, body errorObject) error {
	se := body.statusError(status)
	if i, ok := embedder.BlamedInput(se); ok {
		return &embedder.InputError{Index: i, Err: se}
	}
	return se
}

// embeddingsBody is the body of a successful embeddings answer.
type embeddingsBody struct {
	Data []struct {
		Index     *int            `json:"index"`
		Embedding json.RawMessage `json:"embedding"`
	} `json:"data"`
	Usage struct {
		PromptTokens int `json:"prompt_tokens"`
	} `json:"usage"`
}

// placeEmbeddings puts a successful answer's vectors in input order,
// checking them as the live client does: an unusable answer is a
// retryable server error matching embedder.ErrMalformedResponse; a vector
// of the wrong dimension or holding NaN or infinity blames its input, the
// lowest such, with the live client's permanent classify error.
func placeEmbeddings(eb *embeddingsBody, dims int) ([][]float32, int, error) {
	if eb.Data == nil {
		return nil, 0, malformed(`no "data" array`)
	}
	vecs := make([][]float32, len(eb.Data))
	for _, d := range eb.Data {
		if d.Index == nil || *d.Index < 0 || *d.Index >= len(vecs) || vecs[*d.Index] != nil {
			return nil, 0, malformed("%d embeddings with missing, duplicate or out-of-range indexes", len(eb.Data))
		}
		v, err := decodeVector(d.Embedding)
		if err != nil {
			return nil, 0, malformed("embedding %d: %v", *d.Index, err)
		}
		vecs[*d.Index] = v
	}
	for i, v := range vecs {
		if err := checkVector(v, dims); err != nil {
			return nil, eb.Usage.PromptTokens, &embedder.InputError{Index: i, Err: err}
		}
	}
	return vecs, eb.Usage.PromptTokens, nil
}

func malformed(format string, args ...any) error {
	return classify.Retryable(classify.ClassServerError,
		fmt.Errorf("%w: "+format, append([]any{embedder.ErrMalformedResponse}, args...)...))
}

// decodeVector reads a base64 string of little-endian float32s or an
// array of numbers.
func decodeVector(raw json.RawMessage) ([]float32, error) {
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, err
		}
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return nil, err
		}
		if len(b)%4 != 0 {
			return nil, fmt.Errorf("%d bytes of base64 are not float32s", len(b))
		}
		v := make([]float32, len(b)/4)
		for i := range v {
			v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
		}
		return v, nil
	}
	var v []float32
	err := json.Unmarshal(raw, &v)
	return v, err
}

func checkVector(v []float32, dims int) error {
	if dims > 0 && len(v) != dims {
		return classify.Permanent(classify.ClassDimensionMismatch, fmt.Errorf("vector has %d dimensions, want %d", len(v), dims))
	}
	for _, x := range v {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return classify.Permanent(classify.ClassInvalidVector, errors.New("vector holds NaN or infinity"))
		}
	}
	return nil
}
