package batchapi_test

import (
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"runtime"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/provider/batchapi"
	"github.com/sluicehq/sluice/pkg/classify"
)

// outputFile generates an output file of n lines as it is read, so the
// file itself is never in memory.
type outputFile struct {
	n, next int
	vector  string
	pending []byte
}

func newOutputFile(n, dims int) *outputFile {
	raw := make([]byte, 4*dims)
	for i := range dims {
		binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(float32(i)/float32(dims)))
	}
	return &outputFile{n: n, vector: base64.StdEncoding.EncodeToString(raw)}
}

func (f *outputFile) Read(p []byte) (int, error) {
	for len(f.pending) == 0 {
		if f.next == f.n {
			return 0, io.EOF
		}
		f.pending = fmt.Appendf(f.pending[:0],
			`{"id":"batch_req_%d","custom_id":"c%d","response":{"status_code":200,"request_id":"r%d","body":{"object":"list","data":[{"object":"embedding","index":0,"embedding":"%s"}],"model":"m","usage":{"prompt_tokens":7,"total_tokens":7}}},"error":null}`+"\n",
			f.next, f.next, f.next, f.vector)
		f.next++
	}
	n := copy(p, f.pending)
	f.pending = f.pending[n:]
	return n, nil
}

func TestReaderStreamsInBoundedMemory(t *testing.T) {
	t.Parallel()
	const lines, dims = 100_000, 32 // about 35 MB of file
	r := batchapi.NewReader(newOutputFile(lines, dims), batchapi.ReaderConfig{Dims: dims})
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	base, peak := ms.HeapAlloc, uint64(0)
	n := 0
	for {
		res, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if res.Err != nil || res.CustomID != fmt.Sprint("c", n) || len(res.Vectors) != 1 || len(res.Vectors[0]) != dims {
			t.Fatalf("line %d: %+v", n+1, res)
		}
		n++
		if n%10_000 == 0 {
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapAlloc)
		}
	}
	if n != lines {
		t.Fatalf("read %d lines, want %d", n, lines)
	}
	// Garbage between collections comes and goes; holding the file
	// would cost 35 MB.
	if grown := int64(peak) - int64(base); grown > 16<<20 {
		t.Errorf("heap grew by %d MB reading the file: it is not streamed", grown>>20)
	}
}

func TestReaderLines(t *testing.T) {
	t.Parallel()
	file := strings.Join([]string{
		`{"id":"batch_req_1","custom_id":"ok","response":{"status_code":200,"request_id":"r","body":{"data":[{"index":1,"embedding":[0.5,0.5]},{"index":0,"embedding":[1,0]}],"usage":{"prompt_tokens":3}}},"error":null}`,
		`not json`,
		``,
		`{"id":"batch_req_2","custom_id":"rate","response":{"status_code":429,"request_id":"r","body":{"error":{"message":"slow down","type":"rate_limit_error","param":null,"code":"rate_limit_exceeded"}}},"error":null}`,
		`{"id":"batch_req_3","custom_id":"short","response":{"status_code":200,"request_id":"r","body":{"data":[{"index":0,"embedding":[1,0]},{"index":0,"embedding":[1,0]}]}},"error":null}`,
		`{"id":"batch_req_4","custom_id":"odd","response":null,"error":{"code":"something_new","message":"?"}}`,
	}, "\n")
	r := batchapi.NewReader(strings.NewReader(file), batchapi.ReaderConfig{Dims: 2})
	want := []struct {
		line  int
		id    string
		class string
		disp  classify.Disposition
	}{
		{1, "ok", "", ""},
		{2, "", "", ""}, // malformed
		{4, "rate", classify.ClassRateLimited, classify.Retry},
		{5, "short", classify.ClassServerError, classify.Retry},
		{6, "odd", classify.ClassUnknown, classify.Ambiguous},
	}
	for _, w := range want {
		res, err := r.Next()
		if w.id == "" {
			var le *batchapi.LineError
			if !errors.As(err, &le) || le.Line != w.line || !errors.Is(err, batchapi.ErrMalformedLine) {
				t.Fatalf("line %d: %v, want a malformed line", w.line, err)
			}
			continue
		}
		if err != nil || res.Line != w.line || res.CustomID != w.id {
			t.Fatalf("line %d: %+v, %v", w.line, res, err)
		}
		if d := classify.Classify(res.Err); d.Class != w.class || d.Disposition != w.disp {
			t.Errorf("%s: classified %+v, want %s %s", w.id, d, w.disp, w.class)
		}
	}
	if res, _ := batchapi.NewReader(strings.NewReader(file), batchapi.ReaderConfig{Dims: 2}).Next(); res.Vectors[0][0] != 1 || res.Vectors[1][0] != 0.5 {
		t.Errorf("vectors not placed by index: %v", res.Vectors)
	}
	if _, err := r.Next(); !errors.Is(err, io.EOF) {
		t.Errorf("after the last line: %v, want io.EOF", err)
	}
	long := batchapi.NewReader(strings.NewReader(strings.Repeat("x", 200)+"\n"), batchapi.ReaderConfig{MaxLineBytes: 100})
	if _, err := long.Next(); err == nil || errors.Is(err, io.EOF) {
		t.Errorf("a line over MaxLineBytes: %v, want an error", err)
	}
}
