package messages_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/pkg/messages"
)

// newJob returns a valid job whose content hash matches its text and
// metadata.
func newJob(t testing.TB, text string, metadata string) messages.ChunkJob {
	t.Helper()
	var meta json.RawMessage
	if metadata != "" {
		meta = json.RawMessage(metadata)
	}
	hash, err := messages.ContentHash(text, meta)
	if err != nil {
		t.Fatalf("ContentHash: %v", err)
	}
	return messages.ChunkJob{
		Schema:         messages.ChunkJobSchema,
		DocID:          messages.DocID("wiki", "pages/Go.md"),
		ChunkIndex:     2,
		DocVersion:     3,
		ChunkCount:     5,
		SourceID:       "wiki",
		SourceNativeID: "pages/Go.md",
		RunID:          "run_01",
		ContentHash:    hash,
		Text:           text,
		Metadata:       meta,
		Codec:          "utf-8",
		PublishedAt:    time.Date(2026, 3, 4, 5, 6, 7, 890000000, time.UTC),
	}
}

func mustEncode(t testing.TB, j messages.ChunkJob) []byte {
	t.Helper()
	b, err := j.Encode()
	if err != nil {
		t.Fatalf("Encode: %v", err)
	}
	return b
}

func TestChunkJobRoundTrip(t *testing.T) {
	t.Parallel()

	replay := newJob(t, "x", "")
	replay.ReplayGen = 2
	replay.DeadLetterID = messages.DeadLetterID(replay.DocID, replay.ChunkIndex)
	replay.ReplayID = "r_42"

	tests := []struct {
		name string
		job  messages.ChunkJob
	}{
		{"plain", newJob(t, "hello world", "")},
		{"canonical metadata", newJob(t, "hello", `{"a":1,"b":[true,null,"x"]}`)},
		{"empty text", newJob(t, "", "")},
		{"html and unicode", newJob(t, "<b>Ünïcødé</b> & \u2028 \t\n 🚀", `{"k":"<&>"}`)},
		{"replay", replay},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			data := mustEncode(t, tt.job)
			got, err := messages.DecodeChunkJob(data)
			if err != nil {
				t.Fatalf("DecodeChunkJob(%s): %v", data, err)
			}
			if !reflect.DeepEqual(got, tt.job) {
				t.Errorf("round trip changed the job:\n got %+v\nwant %+v", got, tt.job)
			}
			if again := mustEncode(t, got); !bytes.Equal(again, data) {
				t.Errorf("re-encoding differs:\n got %s\nwant %s", again, data)
			}
		})
	}
}

func TestChunkJobEncodeExact(t *testing.T) {
	t.Parallel()
	j := newJob(t, "a<b>&c", `{ "z" : 1.50, "a" : {"y":[1, 2], "x":"é"} }`)
	j.PublishedAt = time.Date(2026, 3, 4, 7, 6, 7, 890000000, time.FixedZone("CEST", 2*3600))
	want := `{"schema":1,"doc_id":"d_7d012d80acc896b530a029bbe29a125b","chunk_index":2,` +
		`"doc_version":3,"chunk_count":5,"source_id":"wiki","source_native_id":"pages/Go.md",` +
		`"run_id":"run_01","content_hash":"` + j.ContentHash + `","text":"a<b>&c",` +
		`"metadata":{"a":{"x":"é","y":[1,2]},"z":1.50},"codec":"utf-8",` +
		`"published_at":"2026-03-04T05:06:07.89Z"}`
	if got := string(mustEncode(t, j)); got != want {
		t.Errorf("Encode:\n got %s\nwant %s", got, want)
	}
}

func TestChunkJobEncodeIsDeterministic(t *testing.T) {
	t.Parallel()
	spellings := []string{
		`{"b":{"d":2,"c":[1,{"f":true,"e":null}]},"a":"x"}`,
		`{"a":"x","b":{"c":[1,{"e":null,"f":true}],"d":2}}`,
		"\n{ \"a\" : \"x\" ,\t\"b\" : { \"c\" : [ 1 , { \"f\" : true , \"e\" : null } ] , \"d\" : 2 } }\r\n",
		`{"a":"\u0078","b":{"d":2,"c":[1,{"f":true,"e":null}]}}`,
	}
	var first []byte
	var firstHash string
	for i, meta := range spellings {
		j := newJob(t, "same text", meta)
		data := mustEncode(t, j)
		if i == 0 {
			first, firstHash = data, j.ContentHash
			continue
		}
		if j.ContentHash != firstHash {
			t.Errorf("spelling %d: hash %s, want %s", i, j.ContentHash, firstHash)
		}
		if !bytes.Equal(data, first) {
			t.Errorf("spelling %d: encoding\n%s\nwant\n%s", i, data, first)
		}
	}
}

func TestChunkJobEmptyMetadataHasOneForm(t *testing.T) {
	t.Parallel()
	var encodings [][]byte
	for _, meta := range []string{"", "null", "{}", " { } "} {
		j := newJob(t, "t", meta)
		data := mustEncode(t, j)
		if bytes.Contains(data, []byte(`"metadata"`)) {
			t.Errorf("metadata %q: encoding %s should omit empty metadata", meta, data)
		}
		got, err := messages.DecodeChunkJob(data)
		if err != nil {
			t.Fatal(err)
		}
		if got.Metadata != nil {
			t.Errorf("metadata %q: decoded Metadata = %s, want nil", meta, got.Metadata)
		}
		encodings = append(encodings, data)
	}
	for i := range encodings[1:] {
		if !bytes.Equal(encodings[i+1], encodings[0]) {
			t.Errorf("encoding %d differs: %s vs %s", i+1, encodings[i+1], encodings[0])
		}
	}
}

// jobJSON returns a valid encoded job as a map, to be broken by a test case.
func jobJSON(t testing.TB) map[string]any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(mustEncode(t, newJob(t, "hello", `{"lang":"en"}`))))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		t.Fatal(err)
	}
	return m
}

func encodeMap(t testing.TB, m map[string]any) []byte {
	t.Helper()
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestDecodeChunkJobRejects(t *testing.T) {
	t.Parallel()
	valid := string(mustEncode(t, newJob(t, "hello", `{"lang":"en"}`)))
	edit := func(f func(m map[string]any)) string {
		m := jobJSON(t)
		f(m)
		return string(encodeMap(t, m))
	}
	tests := []struct {
		name     string
		input    string
		sentinel error  // besides ErrInvalid; nil for none
		field    string // the DecodeError's Field
		reason   string // a substring of the error text
	}{
		{"empty", "", nil, "", "empty"},
		{"not an object", `[1,2]`, nil, "", "JSON object"},
		{"null", `null`, nil, "", "JSON object"},
		{"syntax", `{"schema":1,`, nil, "", "not valid JSON"},
		{"trailing garbage", valid + `x`, nil, "", "after the JSON object"},
		{"second object", valid + ` {}`, nil, "", "after the JSON object"},
		{"invalid UTF-8 in text", strings.Replace(valid, `"hello"`, "\"hel\xfflo\"", 1), messages.ErrInvalidUTF8, "", "byte offset"},
		{"lone surrogate escape", strings.Replace(valid, `"hello"`, `"hel\ud800lo"`, 1), messages.ErrInvalidUTF8, "", "surrogate"},
		{"reversed surrogates", strings.Replace(valid, `"hello"`, `"\udc00\ud800"`, 1), messages.ErrInvalidUTF8, "", "surrogate"},
		{"unknown schema", edit(func(m map[string]any) { m["schema"] = 2; m["new_field"] = 1 }), messages.ErrUnknownSchema, "schema", "version 2 is not supported (supported: 1)"},
		{"schema zero", edit(func(m map[string]any) { m["schema"] = 0 }), messages.ErrUnknownSchema, "schema", "version 0"},
		{"schema string", edit(func(m map[string]any) { m["schema"] = "1" }), nil, "schema", "integer"},
		{"schema missing", edit(func(m map[string]any) { delete(m, "schema") }), messages.ErrMissingField, "schema", "missing"},
		{"schema null", edit(func(m map[string]any) { m["schema"] = nil }), messages.ErrMissingField, "schema", "missing"},
		{"unknown field", edit(func(m map[string]any) { m["colour"] = "red" }), nil, "colour", "unknown field"},
		{"wrong case field", edit(func(m map[string]any) { m["DOC_ID"] = m["doc_id"]; delete(m, "doc_id") }), nil, "DOC_ID", "unknown field"},
		{"duplicate field", strings.Replace(valid, `"text":"hello"`, `"text":"hello","text":"hello"`, 1), nil, "text", "more than once"},
		{"doc_id missing", edit(func(m map[string]any) { delete(m, "doc_id") }), messages.ErrMissingField, "doc_id", "missing"},
		{"text missing", edit(func(m map[string]any) { delete(m, "text") }), messages.ErrMissingField, "text", "missing"},
		{"published_at null", edit(func(m map[string]any) { m["published_at"] = nil }), messages.ErrMissingField, "published_at", "missing"},
		{"content_hash empty", edit(func(m map[string]any) { m["content_hash"] = "" }), messages.ErrMissingField, "content_hash", "missing"},
		{"doc_id bad char", edit(func(m map[string]any) { m["doc_id"] = "a:b" }), nil, "doc_id", `invalid character ':'`},
		{"source_id dot", edit(func(m map[string]any) { m["source_id"] = "a.b" }), nil, "source_id", `invalid character '.'`},
		{"negative index", edit(func(m map[string]any) { m["chunk_index"] = -1 }), nil, "chunk_index", "negative"},
		{"index equals count", edit(func(m map[string]any) { m["chunk_index"] = 5 }), nil, "chunk_index", "chunk_count is 5"},
		{"fractional index", edit(func(m map[string]any) { m["chunk_index"] = 1.5 }), nil, "chunk_index", "integer"},
		{"index as string", edit(func(m map[string]any) { m["chunk_index"] = "1" }), nil, "chunk_index", "integer"},
		{"zero count", edit(func(m map[string]any) { m["chunk_count"] = 0; m["chunk_index"] = 0 }), nil, "chunk_count", "between 1 and"},
		{"zero version", edit(func(m map[string]any) { m["doc_version"] = 0 }), nil, "doc_version", "at least 1"},
		{"huge version", edit(func(m map[string]any) { m["doc_version"] = json.Number("99999999999999999999") }), nil, "doc_version", "integer"},
		{"hash uppercase", edit(func(m map[string]any) { m["content_hash"] = strings.ToUpper(m["content_hash"].(string)) }), nil, "content_hash", "lowercase hex"},
		{"hash short", edit(func(m map[string]any) { m["content_hash"] = "abc" }), nil, "content_hash", "64 lowercase hex"},
		{"hash mismatch", edit(func(m map[string]any) { m["text"] = "hellO" }), nil, "content_hash", "hash to"},
		{"metadata changed", edit(func(m map[string]any) { m["metadata"] = map[string]any{"lang": "de"} }), nil, "content_hash", "hash to"},
		{"metadata array", edit(func(m map[string]any) { m["metadata"] = []any{1} }), nil, "metadata", "JSON object"},
		{"metadata string", edit(func(m map[string]any) { m["metadata"] = "{}" }), nil, "metadata", "JSON object"},
		{"metadata duplicate key", strings.Replace(valid, `{"lang":"en"}`, `{"lang":"en","lang":"en"}`, 1), nil, "metadata", "more than once"},
		{"published_at garbage", edit(func(m map[string]any) { m["published_at"] = "yesterday" }), nil, "published_at", "RFC 3339"},
		{"published_at number", edit(func(m map[string]any) { m["published_at"] = 5 }), nil, "published_at", "RFC 3339"},
		{"published_at out of range", edit(func(m map[string]any) { m["published_at"] = "9999-12-31T23:00:00-02:00" }), nil, "published_at", "year 10000"},
		{"negative replay_gen", edit(func(m map[string]any) { m["replay_gen"] = -1 }), nil, "replay_gen", "between 0 and"},
		{"replay without dead letter", edit(func(m map[string]any) { m["replay_gen"] = 1 }), messages.ErrMissingField, "dead_letter_id", "replay"},
		{"codec with space", edit(func(m map[string]any) { m["codec"] = "utf 8" }), nil, "codec", "invalid character ' '"},
		{"native id NUL", edit(func(m map[string]any) { m["source_native_id"] = "a\x00b" }), nil, "source_native_id", "NUL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := messages.DecodeChunkJob([]byte(tt.input))
			assertDecodeError(t, err, tt.sentinel, tt.field, tt.reason)
		})
	}
}

func assertDecodeError(t *testing.T, err, sentinel error, field, reason string) {
	t.Helper()
	if err == nil {
		t.Fatal("decoded without error")
	}
	if !errors.Is(err, messages.ErrInvalid) {
		t.Errorf("error %v does not match ErrInvalid", err)
	}
	all := []error{messages.ErrUnknownSchema, messages.ErrOversize, messages.ErrInvalidUTF8, messages.ErrMissingField}
	for _, s := range all {
		if got, want := errors.Is(err, s), s == sentinel; got != want {
			t.Errorf("errors.Is(%v, %v) = %v, want %v", err, s, got, want)
		}
	}
	de, ok := errors.AsType[*messages.DecodeError](err)
	if !ok {
		t.Fatalf("error %v (%T) is not a *DecodeError", err, err)
	}
	if de.Field != field {
		t.Errorf("Field = %q, want %q (error: %v)", de.Field, field, err)
	}
	if !strings.Contains(err.Error(), reason) {
		t.Errorf("error %q does not mention %q", err, reason)
	}
}

func TestDecodeChunkJobOversize(t *testing.T) {
	t.Parallel()
	// Not even valid JSON: the size check must come before parsing.
	data := bytes.Repeat([]byte{'x'}, messages.MaxMessageBytes+1)
	_, err := messages.DecodeChunkJob(data)
	assertDecodeError(t, err, messages.ErrOversize, "", fmt.Sprintf("over the %d-byte limit", messages.MaxMessageBytes))
}

func TestChunkJobEncodeOversize(t *testing.T) {
	t.Parallel()
	j := newJob(t, strings.Repeat("a", messages.MaxMessageBytes), "")
	_, err := j.Encode()
	assertDecodeError(t, err, messages.ErrOversize, "", fmt.Sprintf("over the %d-byte limit", messages.MaxMessageBytes))
}

func TestDecodeChunkJobAcceptsAnyOrderAndWhitespace(t *testing.T) {
	t.Parallel()
	want := newJob(t, "hello", `{"lang":"en"}`)
	// The shape Postgres jsonb gives back: keys reordered, spaces added.
	m := jobJSON(t)
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got, err := messages.DecodeChunkJob(b)
	if err != nil {
		t.Fatalf("DecodeChunkJob: %v", err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
}

func TestDecodeChunkJobNormalisesTime(t *testing.T) {
	t.Parallel()
	m := jobJSON(t)
	m["published_at"] = "2026-03-04T07:06:07.89+02:00"
	got, err := messages.DecodeChunkJob(encodeMap(t, m))
	if err != nil {
		t.Fatal(err)
	}
	want := time.Date(2026, 3, 4, 5, 6, 7, 890000000, time.UTC)
	if got.PublishedAt != want {
		t.Errorf("PublishedAt = %v, want %v in UTC", got.PublishedAt, want)
	}
}

func TestChunkJobValidate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		edit     func(j *messages.ChunkJob)
		sentinel error
		field    string
		reason   string
	}{
		{"valid", func(*messages.ChunkJob) {}, nil, "", ""},
		{"schema unset", func(j *messages.ChunkJob) { j.Schema = 0 }, messages.ErrMissingField, "schema", "ChunkJobSchema"},
		{"schema 2", func(j *messages.ChunkJob) { j.Schema = 2 }, messages.ErrUnknownSchema, "schema", "version 2"},
		{"no run", func(j *messages.ChunkJob) { j.RunID = "" }, messages.ErrMissingField, "run_id", "missing"},
		{"no time", func(j *messages.ChunkJob) { j.PublishedAt = time.Time{} }, messages.ErrMissingField, "published_at", "missing"},
		{"invalid UTF-8 text", func(j *messages.ChunkJob) { j.Text = "\xff" }, messages.ErrInvalidUTF8, "text", "UTF-8"},
		{"stale hash", func(j *messages.ChunkJob) { j.Text += "!" }, nil, "content_hash", "hash to"},
		{"long source", func(j *messages.ChunkJob) { j.SourceID = strings.Repeat("s", 65) }, nil, "source_id", "limit is 64"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			j := newJob(t, "hello", `{"lang":"en"}`)
			tt.edit(&j)
			err := j.Validate()
			if tt.field == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			assertDecodeError(t, err, tt.sentinel, tt.field, tt.reason)
			if _, encErr := j.Encode(); encErr == nil {
				t.Error("Encode accepted a job that Validate rejects")
			}
		})
	}
}

func TestChunkJobJSONMarshalers(t *testing.T) {
	t.Parallel()
	j := newJob(t, "hello", `{"b":1,"a":2}`)
	type envelope struct {
		Job  messages.ChunkJob  `json:"job"`
		Next *messages.ChunkJob `json:"next"`
	}
	b, err := json.Marshal(envelope{Job: j})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte(`"doc_id":`)) || !bytes.Contains(b, []byte(`"metadata":{"a":2,"b":1}`)) {
		t.Errorf("json.Marshal did not use the canonical encoding: %s", b)
	}
	var back envelope
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(mustEncode(t, back.Job), mustEncode(t, j)) || back.Next != nil {
		t.Errorf("json.Unmarshal round trip: got %+v", back)
	}
	if err := json.Unmarshal([]byte(`{"job":{"schema":1}}`), &back); !errors.Is(err, messages.ErrInvalid) {
		t.Errorf("json.Unmarshal of an invalid job: %v, want ErrInvalid", err)
	}
}

// EncodeCanonical gives Encode's bytes and the hash ContentHash gives,
// for canonical metadata, and fails where Encode fails.
func TestEncodeCanonical(t *testing.T) {
	t.Parallel()
	for _, meta := range []string{"", `{}`, `{"a":[1,"x"],"b":{"c":null}}`} {
		want := newJob(t, "Grüße\n\"quoted\"", meta)
		wantRaw := mustEncode(t, want)
		got := want
		got.ContentHash = ""
		raw, err := got.EncodeCanonical()
		if err != nil || string(raw) != string(wantRaw) || got.ContentHash != want.ContentHash {
			t.Errorf("metadata %q: EncodeCanonical gave %s (hash %s, %v), want %s (hash %s)", meta, raw, got.ContentHash, err, wantRaw, want.ContentHash)
		}
	}
	bad := newJob(t, "x", "")
	bad.Text = "\xff"
	if _, err := bad.EncodeCanonical(); !errors.Is(err, messages.ErrInvalidUTF8) {
		t.Errorf("invalid UTF-8: %v, want ErrInvalidUTF8", err)
	}
	bad = newJob(t, "x", "")
	bad.ChunkIndex = bad.ChunkCount
	if _, err := bad.EncodeCanonical(); !errors.Is(err, messages.ErrInvalid) {
		t.Errorf("chunk_index past chunk_count: %v, want ErrInvalid", err)
	}
	// Metadata that is not canonical hashes as written, which the decoder,
	// hashing its canonical form, refuses.
	loose := newJob(t, "x", "")
	loose.Metadata = json.RawMessage(`{"b":1, "a":2}`)
	raw, err := loose.EncodeCanonical()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := messages.DecodeChunkJob(raw); !errors.Is(err, messages.ErrInvalid) {
		t.Errorf("a job hashed over loose metadata decodes: %v", err)
	}
}

// BenchmarkChunkJobEncodeCanonical is BenchmarkChunkJobEncode's job
// encoded as a producer does: hashed and encoded in one call.
func BenchmarkChunkJobEncodeCanonical(b *testing.B) {
	j := benchJob(b)
	j.Metadata, _ = messages.CanonicalJSON(j.Metadata)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := j.EncodeCanonical(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkChunkJobHashThenEncode is what a producer did before
// EncodeCanonical: ContentHash, then Encode, which checks the hash.
func BenchmarkChunkJobHashThenEncode(b *testing.B) {
	j := benchJob(b)
	j.Metadata, _ = messages.CanonicalJSON(j.Metadata)
	b.ReportAllocs()
	for b.Loop() {
		hash, err := messages.ContentHash(j.Text, j.Metadata)
		if err != nil {
			b.Fatal(err)
		}
		j.ContentHash = hash
		if _, err := j.Encode(); err != nil {
			b.Fatal(err)
		}
	}
}
