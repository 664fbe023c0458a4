package corpus

import (
	"errors"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// fuzzLineLimit is small so that the fuzzer reaches the over-limit path.
const fuzzLineLimit = 256

// FuzzReadJSONL reads arbitrary bytes as JSONL from stdin. Whatever the
// input, the walk succeeds and yields one document per non-blank line,
// each either usable or carrying the reason it is not, under a unique id.
func FuzzReadJSONL(f *testing.F) {
	for _, seed := range []string{
		`{"id":"a","text":"alpha","metadata":{"k":[1,2.5,null,true]}}` + "\n" + `{"id":"b","text":"beta"}`,
		"\ufeff" + `{"id":"bom","text":"x"}` + "\r\n\r\n" + `{"id":"bom","text":"dup"}`,
		`{"id":"w","text":"caf` + "\xe9" + `"}`,
		`{"id":"n","text":"nul\u0000"}` + "\n" + `{"id":"e","text":"  "}`,
		`{"id":1}` + "\n" + `[]` + "\n" + `{"id":"x","text":"y"} trailing` + "\n" + `{"id":"x","id":"y","text":""}`,
		`{"id":"long","text":"` + strings.Repeat("z", 300) + `"}` + "\n" + `{"id":"after","text":"ok"}`,
		"\xff\xfe\x00\x01 binary \x00",
		`{"id":"s","text":"\ud800 lone surrogate"}`,
		"",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := NewReader(Config{Inputs: []string{Stdin}, JSONL: true, Stdin: strings.NewReader(string(data)), MaxLineBytes: fuzzLineLimit})
		if err != nil {
			t.Fatal(err)
		}
		var docs []Document
		err = r.Walk(t.Context(), func(d Document) error {
			docs = append(docs, d)
			return nil
		})
		if err != nil {
			t.Fatalf("Walk over an in-memory stream failed: %v", err)
		}
		lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
		nonBlank := 0
		for i, l := range lines {
			l = strings.TrimSuffix(l, "\r")
			if i == 0 {
				l = strings.TrimPrefix(l, "\ufeff")
			}
			if len(l) > fuzzLineLimit || strings.TrimFunc(l, isJSONSpace) != "" {
				nonBlank++
			}
		}
		if len(data) > 0 && len(docs) != nonBlank {
			t.Fatalf("%d documents for %d non-blank lines", len(docs), nonBlank)
		}
		for _, d := range docs {
			checkDocument(t, d)
			if d.Size > fuzzLineLimit && !errors.Is(d.Err, ErrTooLarge) {
				t.Fatalf("line of %d bytes not refused as too large: %+v", d.Size, d)
			}
		}
	})
}

// isJSONSpace is what bytes.TrimSpace removes that can sit in a line.
func isJSONSpace(r rune) bool { return unicode.IsSpace(r) && r != '\n' }

// checkDocument holds a yielded document to the Document contract.
func checkDocument(t *testing.T, d Document) {
	t.Helper()
	switch {
	case d.Status == StatusOK && (d.Err != nil || strings.TrimSpace(d.Text) == ""):
		t.Fatalf("OK document without text or with an error: %+v", d)
	case d.Status != StatusOK && (d.Err == nil || d.Text != ""):
		t.Fatalf("%s document without an error or with text: %+v", d.Status, d)
	case !utf8.ValidString(d.Text):
		t.Fatalf("text is not valid UTF-8: %q", d.Text)
	case d.Metadata == nil:
		t.Fatalf("nil metadata: %+v", d)
	}
}

// FuzzReduceHTML reduces arbitrary markup. It never fails, gives the same
// answer twice, keeps valid UTF-8 valid, and leaves text without markup as
// its words.
func FuzzReduceHTML(f *testing.F) {
	for _, seed := range []string{
		`<!DOCTYPE html><html><head><title>T &amp; t</title><style>p{}</style></head><body><p>a<br>b</p><pre> x
  y</pre></body></html>`,
		`<table><tr><td>1</td><td>2</td></tr></table><ul><li>x<li>y</ul>`,
		`<p>unclosed <b>bold <i>both</p> after`,
		`<script>var s = "</scr" + "ipt>";</script>visible`,
		`<svg><text>hidden</text></svg><template><p>hidden</p></template>&#0;&#x110000;&bogus;`,
		"<p>caf\u00e9 e\u0301 \r\n tab\t</p>",
		"<title>a<title>b</title>",
		"\xff<p>\xfe</p>",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, src string) {
		text, title := ReduceHTML(src)
		text2, title2 := ReduceHTML(src)
		if text != text2 || title != title2 {
			t.Fatal("ReduceHTML is not deterministic")
		}
		if utf8.ValidString(src) && (!utf8.ValidString(text) || !utf8.ValidString(title)) {
			t.Fatalf("valid UTF-8 in, invalid out: %q %q", text, title)
		}
		if strings.TrimRightFunc(text, unicode.IsSpace) != text {
			t.Fatalf("text ends with whitespace: %q", text)
		}
		if strings.ContainsAny(title, "\n\t") {
			t.Fatalf("title keeps layout whitespace: %q", title)
		}
		if utf8.ValidString(src) && !strings.ContainsAny(src, "<&\x00") {
			// Markup-free text keeps its words, one space between them.
			if want := Normalize(strings.Join(strings.Fields(src), " ")); text != want {
				t.Fatalf("plain text %q reduced to %q; want %q", src, text, want)
			}
		}
	})
}
