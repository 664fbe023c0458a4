package messages_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/pkg/messages"
)

func TestCanonicalJSON(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in, want string
	}{
		{"", `{}`},
		{"null", `{}`},
		{" \n null \t", `{}`},
		{"{}", `{}`},
		{`{"b":1,"a":2}`, `{"a":2,"b":1}`},
		{`{ "a" : [ 3 , 1 , 2 ] }`, `{"a":[3,1,2]}`},
		{`{"n":[1.0,1e5,-0,1E+2,0.000001,123456789012345678901234567890]}`, `{"n":[1.0,1e5,-0,1E+2,0.000001,123456789012345678901234567890]}`},
		{`{"deep":{"z":{"y":1,"x":2},"a":null}}`, `{"deep":{"a":null,"z":{"x":2,"y":1}}}`},
		{`{"s":"<&>\u00e9\/"}`, `{"s":"<&>é/"}`},
		{`{"emoji":"\ud83d\ude80"}`, `{"emoji":"🚀"}`},
		{`{"ctl":"a\u0001b\tc"}`, `{"ctl":"a\u0001b\tc"}`},
		{`{"é":1,"e":2,"z":3,"Z":4}`, `{"Z":4,"e":2,"z":3,"é":1}`},
		{`{"b":true,"a":false}`, `{"a":false,"b":true}`},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			t.Parallel()
			got, err := messages.CanonicalJSON(json.RawMessage(tt.in))
			if err != nil {
				t.Fatalf("CanonicalJSON(%s): %v", tt.in, err)
			}
			if string(got) != tt.want {
				t.Errorf("CanonicalJSON(%s) = %s, want %s", tt.in, got, tt.want)
			}
			again, err := messages.CanonicalJSON(got)
			if err != nil || string(again) != string(got) {
				t.Errorf("not idempotent: %s -> %s (%v)", got, again, err)
			}
		})
	}
}

func TestCanonicalJSONRejects(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in string
		sentinel error
		reason   string
	}{
		{"array", `[1]`, nil, "JSON object"},
		{"string", `"x"`, nil, "JSON object"},
		{"number", `1`, nil, "JSON object"},
		{"syntax", `{"a":}`, nil, "not valid JSON"},
		{"two values", `{} {}`, nil, "not valid JSON"},
		{"duplicate key", `{"a":1,"a":1}`, nil, "more than once"},
		{"nested duplicate key", `{"x":[{"a":1,"b":2,"a":3}]}`, nil, "more than once"},
		{"escaped duplicate key", `{"a":1,"\u0061":1}`, nil, "more than once"},
		{"invalid UTF-8", "{\"a\":\"\xff\"}", messages.ErrInvalidUTF8, "UTF-8"},
		{"lone surrogate", `{"a":"\udfff"}`, messages.ErrInvalidUTF8, "surrogate"},
		{"too deep", strings.Repeat(`{"a":`, 20000) + "1" + strings.Repeat("}", 20000), nil, "not valid JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := messages.CanonicalJSON(json.RawMessage(tt.in))
			assertDecodeError(t, err, tt.sentinel, "metadata", tt.reason)
		})
	}
}

func TestContentHash(t *testing.T) {
	t.Parallel()
	// Expected values computed independently: SHA-256 of the canonical
	// {"metadata":…,"text":…} object.
	tests := []struct {
		text, meta, want string
	}{
		{"hello", "", "d693c0ce0c8ed5f87c11943ab7878ad41b1a6638e917f3ef07500b5ba84a1207"},
		{"hello", "null", "d693c0ce0c8ed5f87c11943ab7878ad41b1a6638e917f3ef07500b5ba84a1207"},
		{"hello", " {} ", "d693c0ce0c8ed5f87c11943ab7878ad41b1a6638e917f3ef07500b5ba84a1207"},
		{"héllo <b>", `{"b":"<&>","a":[1,2.50,{"y":true,"x":null}]}`, "90a282d044e73fd8e1767d890b5b25e0010156b8691ccb9e5bd96cb110b34a21"},
	}
	for _, tt := range tests {
		got, err := messages.ContentHash(tt.text, json.RawMessage(tt.meta))
		if err != nil {
			t.Fatalf("ContentHash(%q, %s): %v", tt.text, tt.meta, err)
		}
		if got != tt.want {
			t.Errorf("ContentHash(%q, %s) = %s, want %s", tt.text, tt.meta, got, tt.want)
		}
	}
}

func TestContentHashDistinguishes(t *testing.T) {
	t.Parallel()
	base, _ := messages.ContentHash("a", json.RawMessage(`{"k":1}`))
	for _, c := range []struct{ text, meta string }{
		{"b", `{"k":1}`},
		{"a", `{"k":1.0}`},
		{"a", `{"k":"1"}`},
		{"a", `{"K":1}`},
		{"a ", `{"k":1}`},
		{"a", ""},
	} {
		h, err := messages.ContentHash(c.text, json.RawMessage(c.meta))
		if err != nil {
			t.Fatal(err)
		}
		if h == base {
			t.Errorf("ContentHash(%q, %s) collides with (\"a\", {\"k\":1})", c.text, c.meta)
		}
	}
}

func TestContentHashRejects(t *testing.T) {
	t.Parallel()
	if _, err := messages.ContentHash("\xff", nil); !errors.Is(err, messages.ErrInvalidUTF8) {
		t.Errorf("invalid UTF-8 text: %v, want ErrInvalidUTF8", err)
	}
	if _, err := messages.ContentHash("a", json.RawMessage(`[]`)); !errors.Is(err, messages.ErrInvalid) {
		t.Errorf("array metadata: %v, want ErrInvalid", err)
	}
}
