package embedder

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/sluicehq/sluice/pkg/messages"
)

func jsonUnmarshalString(lit string, dst *string) error { return json.Unmarshal([]byte(lit), dst) }

func TestAppendRequest(t *testing.T) {
	inputs := []string{"a", "quote \" and \\", "ctrl\x01", "bad \xff utf8"}
	var got struct {
		Model          string   `json:"model"`
		Input          []string `json:"input"`
		Dimensions     *int     `json:"dimensions"`
		EncodingFormat string   `json:"encoding_format"`
	}
	if err := json.Unmarshal(appendRequest(nil, "m\"x", inputs, 256, EncodingBase64), &got); err != nil {
		t.Fatal(err)
	}
	if got.Model != "m\"x" || got.Dimensions == nil || *got.Dimensions != 256 || got.EncodingFormat != "base64" || len(got.Input) != 4 {
		t.Errorf("request %+v", got)
	}
	for i, in := range inputs {
		if want := strings.ToValidUTF8(in, "\ufffd"); got.Input[i] != want {
			t.Errorf("input %d = %q, want %q", i, got.Input[i], want)
		}
	}
	body := appendRequest(nil, "m", []string{"x"}, 0, EncodingFloat)
	if strings.Contains(string(body), "dimensions") || !utf8.Valid(body) {
		t.Errorf("dims 0 must omit dimensions: %s", body)
	}
}

func FuzzAppendJSONString(f *testing.F) {
	for _, s := range []string{"", "a", "\"", "\xff", "\u2028", "é\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		enc := messages.AppendJSONString(nil, s)
		var back string
		if err := json.Unmarshal(enc, &back); err != nil {
			t.Fatalf("%q encoded as invalid JSON %s: %v", s, enc, err)
		}
		if want := strings.ToValidUTF8(s, "\ufffd"); utf8.ValidString(s) && back != want {
			t.Fatalf("%q round-tripped as %q", s, back)
		}
	})
}

func TestEndpoint(t *testing.T) {
	for in, want := range map[string]string{
		"http://h:1":           "http://h:1/v1/embeddings",
		"http://h:1/":          "http://h:1/v1/embeddings",
		"http://h:1/v1":        "http://h:1/v1/embeddings",
		"https://h/v1/":        "https://h/v1/embeddings",
		"https://h/openai/v1/": "https://h/openai/v1/embeddings",
	} {
		if got := endpoint(in); got != want {
			t.Errorf("endpoint(%q) = %q, want %q", in, got, want)
		}
	}
}
