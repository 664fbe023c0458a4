package messages_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/pkg/messages"
)

// chunkJobSeeds are valid encodings and near misses of each rejection rule,
// so that the fuzzer starts on both sides of every check.
func chunkJobSeeds(tb testing.TB) [][]byte {
	plain := mustEncode(tb, newJob(tb, "hello world", ""))
	rich := newJob(tb, "Grüße <b>&</b> 🚀\n\ttab", `{"tags":["a","b"],"n":1.50,"nested":{"z":null,"a":true}}`)
	rich.ReplayGen = 1
	rich.DeadLetterID = messages.DeadLetterID(rich.DocID, rich.ChunkIndex)
	rich.ReplayID = "r_1"
	richData := mustEncode(tb, rich)
	s := string(plain)
	return [][]byte{
		plain,
		richData,
		mustEncode(tb, newJob(tb, "", "")),
		[]byte(strings.Replace(s, `"schema":1`, `"schema":2`, 1)),
		[]byte(strings.Replace(s, `"hello world"`, "\"hello \xff world\"", 1)),
		[]byte(strings.Replace(s, `"hello world"`, `"hello \ud800 world"`, 1)),
		[]byte(s + "garbage"),
		[]byte(strings.Replace(s, `"schema":1,`, `"schema":1,"extra":true,`, 1)),
		[]byte(strings.Replace(s, `"schema":1,`, `"schema":1,"schema":1,`, 1)),
		[]byte(strings.Replace(s, `"chunk_index":2`, `"chunk_index":-1`, 1)),
		[]byte(s[:len(s)/2]),
		[]byte(""),
		[]byte("null"),
		[]byte("{}"),
	}
}

func FuzzDecodeChunkJob(f *testing.F) {
	for _, seed := range chunkJobSeeds(f) {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		j, err := messages.DecodeChunkJob(data)
		if err != nil {
			checkRejection(t, err)
			return
		}
		first, err := j.Encode()
		if err != nil {
			t.Fatalf("a decoded job does not encode: %v\ninput: %q", err, data)
		}
		again, err := messages.DecodeChunkJob(first)
		if err != nil {
			t.Fatalf("the re-encoding does not decode: %v\nencoding: %q", err, first)
		}
		if !reflect.DeepEqual(again, j) {
			t.Fatalf("decode(encode(job)) != job:\n got %+v\nwant %+v", again, j)
		}
		second, err := again.Encode()
		if err != nil || !bytes.Equal(second, first) {
			t.Fatalf("encoding is not stable (%v):\n first %q\nsecond %q", err, first, second)
		}
	})
}

// FuzzChunkJobEncode drives the success path harder than FuzzDecodeChunkJob
// can, since a random mutation of an encoded job almost never keeps its
// content hash right.
func FuzzChunkJobEncode(f *testing.F) {
	f.Add("hello", []byte(`{"b":1,"a":[1.0,"x"]}`), "utf-8", int64(0))
	f.Add("", []byte(""), "", int64(1))
	f.Add("<&>\u2028", []byte("null"), "windows-1252", int64(-7200))
	f.Add("\xff", []byte(`{"a":"\ud800"}`), "x y", int64(3600))
	f.Fuzz(func(t *testing.T, text string, metadata []byte, codec string, offsetSeconds int64) {
		hash, err := messages.ContentHash(text, metadata)
		if err != nil {
			checkRejection(t, err)
			return
		}
		zone := time.FixedZone("", int(offsetSeconds%(18*3600)))
		j := messages.ChunkJob{
			Schema: messages.ChunkJobSchema, DocID: "d_1", ChunkIndex: 0, DocVersion: 1, ChunkCount: 1,
			SourceID: "s", SourceNativeID: "n", RunID: "r", ContentHash: hash, Text: text,
			Metadata: metadata, Codec: codec, PublishedAt: time.Date(2026, 1, 2, 3, 4, 5, 6, zone),
		}
		data, err := j.Encode()
		if err != nil {
			checkRejection(t, err)
			if j.Validate() == nil {
				t.Fatalf("Encode failed on a job that validates: %v", err)
			}
			return
		}
		got, err := messages.DecodeChunkJob(data)
		if err != nil {
			t.Fatalf("an encoded job does not decode: %v\nencoding: %q", err, data)
		}
		if got.Text != text || got.Codec != codec || !got.PublishedAt.Equal(j.PublishedAt) || got.ContentHash != hash {
			t.Fatalf("round trip changed the job:\n got %+v\nwant %+v", got, j)
		}
		canonical, _ := messages.CanonicalJSON(metadata)
		if string(canonical) == "{}" {
			canonical = nil
		}
		if !bytes.Equal(got.Metadata, canonical) {
			t.Fatalf("metadata %q decoded as %q, want %q", metadata, got.Metadata, canonical)
		}
		if again, err := got.Encode(); err != nil || !bytes.Equal(again, data) {
			t.Fatalf("encoding is not stable (%v):\n first %q\nsecond %q", err, data, again)
		}
	})
}

func FuzzDecodeDeadLetter(f *testing.F) {
	plain := mustEncodeDL(f, newDeadLetter(f, []byte("{\"text\":\"\xff\"}")))
	bare := newDeadLetter(f, nil)
	bare.NextRetryAt, bare.ErrorCode = nil, ""
	s := string(plain)
	for _, seed := range [][]byte{
		plain,
		mustEncodeDL(f, bare),
		[]byte(strings.Replace(s, `"schema":1`, `"schema":2`, 1)),
		[]byte(strings.Replace(s, `"attempts":5`, `"attempts":0`, 1)),
		[]byte(strings.Replace(s, `"disposition":"retry"`, `"disposition":"drop"`, 1)),
		[]byte(s + "]"),
		[]byte(""),
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := messages.DecodeDeadLetter(data)
		if err != nil {
			checkRejection(t, err)
			return
		}
		first, err := d.Encode()
		if err != nil {
			t.Fatalf("a decoded dead letter does not encode: %v\ninput: %q", err, data)
		}
		again, err := messages.DecodeDeadLetter(first)
		if err != nil {
			t.Fatalf("the re-encoding does not decode: %v\nencoding: %q", err, first)
		}
		if !reflect.DeepEqual(again, d) {
			t.Fatalf("decode(encode(dl)) != dl:\n got %+v\nwant %+v", again, d)
		}
		if second, err := again.Encode(); err != nil || !bytes.Equal(second, first) {
			t.Fatalf("encoding is not stable (%v):\n first %q\nsecond %q", err, first, second)
		}
	})
}

func FuzzCanonicalJSON(f *testing.F) {
	for _, seed := range []string{
		`{"b":1,"a":{"d":[1,2.0,-0e1],"c":"\u00e9"}}`, `null`, ``, `[]`, `{"a":1,"a":2}`, `{"\ud83d\ude80":"x"}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		out, err := messages.CanonicalJSON(raw)
		if err != nil {
			checkRejection(t, err)
			return
		}
		if !json.Valid(out) || out[0] != '{' {
			t.Fatalf("CanonicalJSON(%q) = %q, not a JSON object", raw, out)
		}
		again, err := messages.CanonicalJSON(out)
		if err != nil || !bytes.Equal(again, out) {
			t.Fatalf("not idempotent (%v): %q -> %q", err, out, again)
		}
		var a, b any
		if json.Unmarshal(raw, &a) == nil && json.Unmarshal(out, &b) == nil && a != nil && !reflect.DeepEqual(a, b) {
			t.Fatalf("meaning changed: %q -> %q", raw, out)
		}
	})
}

func checkRejection(t *testing.T, err error) {
	t.Helper()
	if !errors.Is(err, messages.ErrInvalid) {
		t.Fatalf("error %v does not match ErrInvalid", err)
	}
	if _, ok := errors.AsType[*messages.DecodeError](err); !ok {
		t.Fatalf("error %v (%T) is not a *DecodeError", err, err)
	}
}

// TestFuzzCorpus keeps the committed seeds honest: those named valid_* must
// decode, so that the fuzzer's success path stays seeded, and the others
// must not.
func TestFuzzCorpus(t *testing.T) {
	t.Parallel()
	decoders := map[string]func([]byte) error{
		"FuzzDecodeChunkJob": func(b []byte) error {
			_, err := messages.DecodeChunkJob(b)
			return err
		},
		"FuzzDecodeDeadLetter": func(b []byte) error {
			_, err := messages.DecodeDeadLetter(b)
			return err
		},
		"FuzzDecodeBackfillJob": func(b []byte) error {
			_, err := messages.DecodeBackfillJob(b)
			return err
		},
	}
	for target, decode := range decoders {
		paths, err := filepath.Glob(filepath.Join("testdata", "fuzz", target, "*"))
		if err != nil || len(paths) == 0 {
			t.Fatalf("no committed corpus for %s (%v)", target, err)
		}
		for _, path := range paths {
			data := readCorpusFile(t, path)
			err := decode(data)
			if wantValid := strings.HasPrefix(filepath.Base(path), "valid_"); wantValid != (err == nil) {
				t.Errorf("%s: decode error %v, want valid=%v", path, err, wantValid)
			}
		}
	}
}

// readCorpusFile reads a one-value []byte file in the "go test fuzz v1"
// format.
func readCorpusFile(t *testing.T, path string) []byte {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
	if len(lines) != 2 || lines[0] != "go test fuzz v1" ||
		!strings.HasPrefix(lines[1], "[]byte(") || !strings.HasSuffix(lines[1], ")") {
		t.Fatalf("%s is not a one-value []byte corpus file", path)
	}
	s, err := strconv.Unquote(strings.TrimSuffix(strings.TrimPrefix(lines[1], "[]byte("), ")"))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return []byte(s)
}
