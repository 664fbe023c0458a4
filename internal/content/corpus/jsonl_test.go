package corpus

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestReaderJSONL(t *testing.T) {
	t.Parallel()

	lines := []string{
		`{"id":"doc-1","text":"first\r\ndocument","metadata":{"lang":"en","n":12345678901234567890}}`, // 1
		``,                               // 2: blank lines carry no record
		`{"id":"doc-2","text":"second"}`, // 3
		`{"id":"doc-1","text":"again"}`,  // 4: repeated id, the producer's to rename
		`{"id":"doc-3","text":`,          // 5: truncated JSON
		`not json at all`,                // 6
		`{"text":"no id"}`,               // 7
		`{"id":42,"text":"numeric id"}`,  // 8
		`{"id":"doc-4","text":["not","a","string"]}`, // 9
		`{"id":"doc-5"}`, // 10: no text
		`{"id":"doc-6","text":"x","title":"misplaced"}`,        // 11: unknown field
		`{"id":"doc-7","text":"x","metadata":"not an object"}`, // 12
		`{"id":"doc-8","text":"x"} {"id":"doc-9","text":"y"}`,  // 13: two records on a line
		`["an","array"]`,                                               // 14
		`{"id":"doc-10","text":"   \n"}`,                               // 15: empty text
		`{"id":"doc-11","text":"nul\u0000inside"}`,                     // 16
		`{"id":"doc-12","id":"doc-13","text":"x"}`,                     // 17: field twice
		`{"id":"","text":"x"}`,                                         // 18
		"{\"id\":\"doc-14\",\"text\":\"caf\xe9\"}",                     // 19: Windows-1252 line
		`   {"id":"doc-15","text":"padded","metadata":null}   `,        // 20
		`{"id":"doc-16","text":"e` + "\u0301" + `"}`,                   // 21: normalised to NFC
		`{"id":"doc-2#dup","text":"an id that looks derived is fine"}`, // 22
	}
	root := t.TempDir()
	writeTree(t, root, map[string]string{"corpus/records.jsonl": strings.Join(lines, "\r\n") + "\n"})
	docs := readAll(t, Config{Inputs: []string{root}})

	type want struct {
		id     string
		line   int
		status Status
		text   string
		err    error
		detail string
	}
	wants := []want{
		{"doc-1", 1, StatusOK, "first\ndocument", nil, ""},
		{"doc-2", 3, StatusOK, "second", nil, ""},
		{"doc-1", 4, StatusOK, "again", nil, ""},
		{"doc-3", 5, StatusInvalid, "", ErrInvalidRecord, "line ends inside the record"},
		{"corpus/records.jsonl#L6", 6, StatusInvalid, "", ErrInvalidRecord, "invalid JSON"},
		{"corpus/records.jsonl#L7", 7, StatusInvalid, "", ErrInvalidRecord, "id is missing"},
		{"corpus/records.jsonl#L8", 8, StatusInvalid, "", ErrInvalidRecord, "id must be a string, not a number"},
		{"doc-4", 9, StatusInvalid, "", ErrInvalidRecord, "text must be a string, not an array"},
		{"doc-5", 10, StatusInvalid, "", ErrInvalidRecord, "text is missing"},
		{"doc-6", 11, StatusInvalid, "", ErrInvalidRecord, `unknown field "title"`},
		{"doc-7", 12, StatusInvalid, "", ErrInvalidRecord, "metadata must be an object, not a string"},
		{"doc-8", 13, StatusInvalid, "", ErrInvalidRecord, "unexpected data after"},
		{"corpus/records.jsonl#L14", 14, StatusInvalid, "", ErrInvalidRecord, "is an array, not a JSON object"},
		{"doc-10", 15, StatusEmpty, "", ErrEmpty, ""},
		{"doc-11", 16, StatusUndecodable, "", ErrUndecodable, "NUL"},
		{"doc-12", 17, StatusInvalid, "", ErrInvalidRecord, `field "id" appears twice`},
		{"corpus/records.jsonl#L18", 18, StatusInvalid, "", ErrInvalidRecord, "id is empty"},
		{"doc-14", 19, StatusOK, "café", nil, ""},
		{"doc-15", 20, StatusOK, "padded", nil, ""},
		{"doc-16", 21, StatusOK, "\u00e9", nil, ""},
		{"doc-2#dup", 22, StatusOK, "an id that looks derived is fine", nil, ""},
	}
	if len(docs) != len(wants) {
		t.Fatalf("got %d documents %q, want %d: no line may be dropped", len(docs), ids(docs), len(wants))
	}
	for i, w := range wants {
		d := docs[i]
		if d.NativeID != w.id || d.Status != w.status || d.Text != w.text {
			t.Errorf("line %d: got id %q status %q text %q; want %q %q %q (err %v)", w.line, d.NativeID, d.Status, d.Text, w.id, w.status, w.text, d.Err)
			continue
		}
		if w.err == nil {
			if d.Err != nil {
				t.Errorf("line %d: unexpected Err %v", w.line, d.Err)
			}
			continue
		}
		var le *LineError
		if !errors.Is(d.Err, w.err) || !errors.As(d.Err, &le) || le.Line != w.line || le.Name != "corpus/records.jsonl" {
			t.Errorf("line %d: Err = %v, want %v at corpus/records.jsonl line %d", w.line, d.Err, w.err, w.line)
		}
		if !strings.Contains(d.Err.Error(), w.detail) {
			t.Errorf("line %d: Err %q does not say %q", w.line, d.Err, w.detail)
		}
	}

	first := docs[0]
	if first.Metadata["lang"] != "en" || first.Metadata["n"] != json.Number("12345678901234567890") {
		t.Errorf("metadata = %#v; numbers must survive exactly", first.Metadata)
	}
	if first.Codec != CodecUTF8 || docs[17].Codec != CodecWindows1252 {
		t.Errorf("codecs = %q, %q", first.Codec, docs[17].Codec)
	}
	if docs[1].Metadata == nil || len(docs[1].Metadata) != 0 {
		t.Errorf("a record without metadata gets an empty map, got %#v", docs[1].Metadata)
	}
	if docs[0].Size != int64(len(lines[0])) {
		t.Errorf("Size = %d, want the line's length %d", docs[0].Size, len(lines[0]))
	}
}

func TestReaderJSONLLongLines(t *testing.T) {
	t.Parallel()

	long := `{"id":"long","text":"` + strings.Repeat("x", 200_000) + `"}`
	content := "\xEF\xBB\xBF" + `{"id":"a","text":"before"}` + "\n" + long + "\n" + `{"id":"b","text":"after"}`

	t.Run("within the limit", func(t *testing.T) {
		t.Parallel()
		path := filepath.Join(t.TempDir(), "big.jsonl")
		writeTree(t, filepath.Dir(path), map[string]string{"big.jsonl": content})
		docs := readAll(t, Config{Inputs: []string{path}})
		if got, want := ids(docs), []string{"a", "long", "b"}; !slices.Equal(got, want) {
			t.Fatalf("native ids = %q, want %q", got, want)
		}
		if len(docs[1].Text) != 200_000 || docs[1].Status != StatusOK {
			t.Errorf("long line: status %q, %d bytes of text", docs[1].Status, len(docs[1].Text))
		}
	})
	t.Run("over the limit", func(t *testing.T) {
		t.Parallel()
		path := filepath.Join(t.TempDir(), "big.jsonl")
		writeTree(t, filepath.Dir(path), map[string]string{"big.jsonl": content})
		docs := readAll(t, Config{Inputs: []string{path}, MaxLineBytes: 100_000})
		if got, want := ids(docs), []string{"a", "big.jsonl#L2", "b"}; !slices.Equal(got, want) {
			t.Fatalf("native ids = %q, want %q", got, want)
		}
		var tooLarge *TooLargeError
		if docs[1].Status != StatusInvalid || !errors.As(docs[1].Err, &tooLarge) || tooLarge.Size != int64(len(long)) {
			t.Errorf("long line = %+v", docs[1])
		}
		if docs[2].Text != "after" {
			t.Errorf("the line after a long one is read normally: %+v", docs[2])
		}
	})
}

func TestReaderJSONLFlag(t *testing.T) {
	t.Parallel()

	root := t.TempDir()
	writeTree(t, root, map[string]string{"export.txt": `{"id":"r1","text":"record"}` + "\n"})
	docs := readAll(t, Config{Inputs: []string{filepath.Join(root, "export.txt")}, JSONL: true})
	if got := ids(docs); !slices.Equal(got, []string{"r1"}) || docs[0].Text != "record" {
		t.Errorf("documents = %+v", docs)
	}
}
