package messages_test

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/sluicehq/sluice/pkg/messages"
)

func newDeadLetter(t testing.TB, payload []byte) messages.DeadLetter {
	t.Helper()
	docID := messages.DocID("wiki", "pages/Go.md")
	next := time.Date(2026, 3, 4, 6, 0, 0, 0, time.UTC)
	return messages.DeadLetter{
		Schema:         messages.DeadLetterSchema,
		DeadLetterID:   messages.DeadLetterID(docID, 2),
		DocID:          docID,
		ChunkIndex:     2,
		DocVersion:     3,
		SourceID:       "wiki",
		SourceNativeID: "pages/Go.md",
		RunID:          "run_01",
		Disposition:    messages.DispositionRetry,
		ErrorClass:     "rate_limited",
		ErrorCode:      "http_429",
		ErrorDetail:    messages.TruncateDetail(`embed: 429 Too Many Requests <retry in 5s> & "soon"`),
		Stage:          "embed",
		Attempts:       5,
		ReplayGen:      1,
		FailedAt:       time.Date(2026, 3, 4, 5, 6, 7, 1, time.UTC),
		NextRetryAt:    &next,
		Payload:        payload,
	}
}

func mustEncodeDL(t testing.TB, d messages.DeadLetter) []byte {
	t.Helper()
	b, err := d.Encode()
	if err != nil {
		t.Fatalf("Encode: %v", err)
	}
	return b
}

func TestDeadLetterRoundTrip(t *testing.T) {
	t.Parallel()
	job := mustEncode(t, newJob(t, "hello", ""))
	allBytes := make([]byte, 256)
	for i := range allBytes {
		allBytes[i] = byte(i)
	}
	bare := newDeadLetter(t, []byte("x"))
	bare.ErrorCode, bare.NextRetryAt, bare.SourceNativeID, bare.RunID, bare.DocVersion = "", nil, "", "", 0

	tests := []struct {
		name string
		dl   messages.DeadLetter
	}{
		{"job payload", newDeadLetter(t, job)},
		{"invalid UTF-8 payload", newDeadLetter(t, []byte("{\"text\":\"\xff\xfe\"}"))},
		{"every byte value", newDeadLetter(t, allBytes)},
		{"empty payload", newDeadLetter(t, nil)},
		{"optional fields empty", bare},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			data := mustEncodeDL(t, tt.dl)
			if !utf8.Valid(data) {
				t.Errorf("envelope is not valid UTF-8: %q", data)
			}
			got, err := messages.DecodeDeadLetter(data)
			if err != nil {
				t.Fatalf("DecodeDeadLetter(%s): %v", data, err)
			}
			if !bytes.Equal(got.Payload, tt.dl.Payload) {
				t.Errorf("payload changed:\n got %q\nwant %q", got.Payload, tt.dl.Payload)
			}
			if !reflect.DeepEqual(got, tt.dl) {
				t.Errorf("round trip changed the dead letter:\n got %+v\nwant %+v", got, tt.dl)
			}
			if again := mustEncodeDL(t, got); !bytes.Equal(again, data) {
				t.Errorf("re-encoding differs:\n got %s\nwant %s", again, data)
			}
		})
	}
}

func TestDeadLetterEncodeExact(t *testing.T) {
	t.Parallel()
	d := newDeadLetter(t, []byte{0xff, 0x00, 'a'})
	d.ErrorDetail = "bad <input> & more"
	want := `{"schema":1,"dead_letter_id":"` + d.DeadLetterID + `","doc_id":"d_7d012d80acc896b530a029bbe29a125b",` +
		`"chunk_index":2,"doc_version":3,"source_id":"wiki","source_native_id":"pages/Go.md","run_id":"run_01",` +
		`"disposition":"retry","error_class":"rate_limited","error_code":"http_429","error_detail":"bad <input> & more",` +
		`"stage":"embed","attempts":5,"replay_gen":1,"failed_at":"2026-03-04T05:06:07.000000001Z",` +
		`"next_retry_at":"2026-03-04T06:00:00Z","payload":"/wBh"}`
	if got := string(mustEncodeDL(t, d)); got != want {
		t.Errorf("Encode:\n got %s\nwant %s", got, want)
	}
}

func TestDeadLetterLargestEncodes(t *testing.T) {
	t.Parallel()
	// Every field at its limit, with characters that escape to six bytes:
	// a dead letter that validates must always fit MaxDeadLetterBytes.
	d := newDeadLetter(t, bytes.Repeat([]byte{0xff}, messages.MaxMessageBytes))
	d.SourceNativeID = strings.Repeat("\x01", 4096)
	d.ErrorDetail = strings.Repeat("\x01", messages.MaxErrorDetailChars)
	d.RunID = strings.Repeat("r", 128)
	data := mustEncodeDL(t, d)
	if _, err := messages.DecodeDeadLetter(data); err != nil {
		t.Fatalf("DecodeDeadLetter: %v", err)
	}
}

func dlJSON(t testing.TB) map[string]any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(mustEncodeDL(t, newDeadLetter(t, []byte("job")))))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestDecodeDeadLetterRejects(t *testing.T) {
	t.Parallel()
	valid := string(mustEncodeDL(t, newDeadLetter(t, []byte("job"))))
	edit := func(f func(m map[string]any)) string {
		m := dlJSON(t)
		f(m)
		return string(encodeMap(t, m))
	}
	tests := []struct {
		name     string
		input    string
		sentinel error
		field    string
		reason   string
	}{
		{"oversize", strings.Repeat(" ", messages.MaxDeadLetterBytes+1), messages.ErrOversize, "", "limit"},
		{"invalid UTF-8", strings.Replace(valid, `"embed"`, "\"emb\xffed\"", 1), messages.ErrInvalidUTF8, "", "byte offset"},
		{"trailing", valid + "}", nil, "", "after the JSON object"},
		{"unknown schema", edit(func(m map[string]any) { m["schema"] = 2 }), messages.ErrUnknownSchema, "schema", "version 2"},
		{"unknown field", edit(func(m map[string]any) { m["severity"] = "high" }), nil, "severity", "unknown field"},
		{"missing payload", edit(func(m map[string]any) { delete(m, "payload") }), messages.ErrMissingField, "payload", "missing"},
		{"missing detail", edit(func(m map[string]any) { delete(m, "error_detail") }), messages.ErrMissingField, "error_detail", "missing"},
		{"missing class", edit(func(m map[string]any) { m["error_class"] = "" }), messages.ErrMissingField, "error_class", "missing"},
		{"bad disposition", edit(func(m map[string]any) { m["disposition"] = "drop" }), nil, "disposition", `"drop" is not one of`},
		{"zero attempts", edit(func(m map[string]any) { m["attempts"] = 0 }), nil, "attempts", "between 1 and"},
		{"negative replay_gen", edit(func(m map[string]any) { m["replay_gen"] = -1 }), nil, "replay_gen", "between 0 and"},
		{"payload not base64", edit(func(m map[string]any) { m["payload"] = "not base64!" }), nil, "payload", "base64"},
		{"payload unpadded", edit(func(m map[string]any) { m["payload"] = "am9i" + "YQ" }), nil, "payload", "base64"},
		{"payload stray bits", edit(func(m map[string]any) { m["payload"] = "YR==" }), nil, "payload", "base64"},
		{"payload line break", edit(func(m map[string]any) { m["payload"] = "am9i\n" }), nil, "payload", "line breaks"},
		{"payload as bytes", edit(func(m map[string]any) { m["payload"] = []any{1, 2} }), nil, "payload", "base64"},
		{"detail too long", edit(func(m map[string]any) { m["error_detail"] = strings.Repeat("é", 2001) }), nil, "error_detail", "TruncateDetail"},
		{"detail NUL", edit(func(m map[string]any) { m["error_detail"] = "a\x00" }), nil, "error_detail", "NUL"},
		{"bad next_retry_at", edit(func(m map[string]any) { m["next_retry_at"] = "soon" }), nil, "next_retry_at", "RFC 3339"},
		{"source with dot", edit(func(m map[string]any) { m["source_id"] = "a.b" }), nil, "source_id", "subject token"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := messages.DecodeDeadLetter([]byte(tt.input))
			assertDecodeError(t, err, tt.sentinel, tt.field, tt.reason)
		})
	}
}

func TestDeadLetterValidatePayloadLimit(t *testing.T) {
	t.Parallel()
	d := newDeadLetter(t, make([]byte, messages.MaxMessageBytes+1))
	assertDecodeError(t, d.Validate(), messages.ErrOversize, "payload", "limit")
}

func TestDeadLetterJSONMarshalers(t *testing.T) {
	t.Parallel()
	d := newDeadLetter(t, []byte{0xff})
	b, err := json.Marshal(map[string]any{"dl": d})
	if err != nil {
		t.Fatal(err)
	}
	var back map[string]messages.DeadLetter
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back["dl"], d) {
		t.Errorf("got %+v, want %+v", back["dl"], d)
	}
}

func TestTruncateDetail(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in, want string
	}{
		{"short", "boom", "boom"},
		{"exactly at limit", strings.Repeat("a", 2000), strings.Repeat("a", 2000)},
		{"one over", strings.Repeat("a", 2001), strings.Repeat("a", 1999) + "…"},
		{"multibyte at limit", strings.Repeat("日", 2000), strings.Repeat("日", 2000)},
		{"multibyte over", strings.Repeat("🚀", 3000), strings.Repeat("🚀", 1999) + "…"},
		{"mixed widths over", strings.Repeat("aé日🚀", 600), strings.Repeat("aé日🚀", 499) + "aé日…"},
		{"invalid UTF-8", "bad \xff\xfe byte", "bad \uFFFD byte"},
		{"NUL", "a\x00b", "a\uFFFDb"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := messages.TruncateDetail(tt.in)
			if got != tt.want {
				t.Errorf("TruncateDetail = %q (%d runes), want %q (%d runes)",
					got, utf8.RuneCountInString(got), tt.want, utf8.RuneCountInString(tt.want))
			}
			if !utf8.ValidString(got) || utf8.RuneCountInString(got) > messages.MaxErrorDetailChars {
				t.Errorf("result is invalid UTF-8 or over the limit: %d runes", utf8.RuneCountInString(got))
			}
		})
	}
}
