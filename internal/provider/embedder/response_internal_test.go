package embedder

import (
	"encoding/base64"
	"encoding/binary"
	"math"
	"strconv"
	"testing"

	"github.com/sluicehq/sluice/pkg/messages"
)

// replyBody builds a provider reply for n vectors of dims values.
func replyBody(n, dims int, b64 bool) []byte {
	out := []byte(`{"object":"list","data":[`)
	raw := make([]byte, 0, dims*4)
	for i := range n {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, `{"object":"embedding","index":`...)
		out = strconv.AppendInt(out, int64(i), 10)
		out = append(out, `,"embedding":`...)
		raw = raw[:0]
		if b64 {
			for j := range dims {
				raw = binary.LittleEndian.AppendUint32(raw, math.Float32bits(float32(j)/float32(dims)))
			}
			out = append(out, '"')
			out = base64.StdEncoding.AppendEncode(out, raw)
			out = append(out, '"')
		} else {
			out = append(out, '[')
			for j := range dims {
				if j > 0 {
					out = append(out, ',')
				}
				out = strconv.AppendFloat(out, float64(float32(j)/float32(dims)), 'g', -1, 32)
			}
			out = append(out, ']')
		}
		out = append(out, '}')
	}
	return append(out, `],"model":"m","usage":{"prompt_tokens":1,"total_tokens":1}}`...)
}

func decodeBody(d *responseDecoder, body []byte, n, dims int) ([][]float32, error) {
	d.body = append(d.body[:0], body...)
	if err := d.parse(); err != nil {
		return nil, err
	}
	vecs, _, err := d.place(n, dims)
	return vecs, err
}

func TestDecodeAllocatesOnlyTheResult(t *testing.T) {
	for _, b64 := range []bool{true, false} {
		body := replyBody(64, 384, b64)
		d := new(responseDecoder)
		if _, err := decodeBody(d, body, 64, 384); err != nil {
			t.Fatal(err)
		}
		allocs := testing.AllocsPerRun(20, func() {
			if _, err := decodeBody(d, body, 64, 384); err != nil {
				t.Fatal(err)
			}
		})
		// One backing array for all vectors, one slice of headers.
		if allocs > 2 {
			t.Errorf("base64=%v: %v allocations per decode, want <= 2", b64, allocs)
		}
	}
}

func TestDecodeValues(t *testing.T) {
	for _, b64 := range []bool{true, false} {
		vecs, err := decodeBody(new(responseDecoder), replyBody(3, 5, b64), 3, 5)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range vecs {
			for j, x := range v {
				if x != float32(j)/5 {
					t.Fatalf("base64=%v: value %d = %v", b64, j, x)
				}
			}
		}
	}
}

func TestDecodeToleratesPythonLiterals(t *testing.T) {
	for _, lit := range []string{"NaN", "Infinity", "-Infinity", "1e999"} {
		body := []byte(`{"data":[{"index":0,"embedding":[0.1,` + lit + `]}]}`)
		_, err := decodeBody(new(responseDecoder), body, 1, 2)
		ie, ok := err.(*InputError)
		if !ok || ie.Index != 0 {
			t.Errorf("%s: err = %v, want an InputError for input 0", lit, err)
		}
	}
}

func FuzzDecode(f *testing.F) {
	f.Add(replyBody(2, 3, true), 2, 3)
	f.Add(replyBody(2, 3, false), 2, 3)
	f.Add([]byte(`{"data":[{"index":0,"embedding":"AACAP\/\/\/fz8="}],"x":[{"y":[null,true]}]}`), 1, 2)
	f.Fuzz(func(t *testing.T, body []byte, n, dims int) {
		if n < 1 || n > 64 || dims < 0 || dims > 64 {
			return
		}
		vecs, err := decodeBody(new(responseDecoder), body, n, dims)
		if err != nil {
			return
		}
		if len(vecs) != n {
			t.Fatalf("%d vectors for %d inputs", len(vecs), n)
		}
		for _, v := range vecs {
			if dims > 0 && len(v) != dims {
				t.Fatalf("vector of %d, want %d", len(v), dims)
			}
		}
	})
}

func BenchmarkDecode(b *testing.B) {
	for _, tc := range []struct {
		name string
		b64  bool
	}{{"base64", true}, {"float", false}} {
		b.Run(tc.name, func(b *testing.B) {
			body := replyBody(64, 384, tc.b64)
			d := new(responseDecoder)
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := decodeBody(d, body, 64, 384); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func TestAppendJSONStringMatchesEncodingJSON(t *testing.T) {
	for _, s := range []string{"", "plain", "\"\\/", "\x00\x1f\x7f", "é東🚀", "\u2028\u2029", "\xff", "a\xc3"} {
		got := string(messages.AppendJSONString(nil, s))
		var back string
		if err := jsonUnmarshalString(got, &back); err != nil {
			t.Errorf("%q encoded as %s: %v", s, got, err)
		}
	}
}
