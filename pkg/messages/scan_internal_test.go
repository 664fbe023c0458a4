package messages

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// FuzzScanObject holds the one-pass reader to what it replaced: the same
// members, each string it decoded decoded as json.Unmarshal decodes it,
// or the same error.
func FuzzScanObject(f *testing.F) {
	for _, seed := range []string{
		`{"a":"x\n\"y\u00e9\ud83d\ude80","b":-1.5e+3,"c":[true,false,null,{}],"d":{"e":[]}}`,
		`{}`, ` { "a" : 1 } `, `{"a":01}`, `{"a":"\ud800"}`, `{"a":"\udc00x"}`, "{\"a\":\"\xff\"}", `{"a":1,}`,
		`{"a":1}x`, `[1]`, `null`, ``, `{"a":"\x"}`, `{"a":tru}`, `{"a":-}`, `{"a":1.}`, `{"a":1e}`, "{\"a\":\"\t\"}",
		`{"a":1,"a":2}`, `{"a":[1 2]}`, `{"a":{"b"}}`, `{"a":"\u12"}`,
	} {
		f.Add([]byte(seed))
	}
	paths, _ := filepath.Glob(filepath.Join("testdata", "fuzz", "FuzzDecode*", "*"))
	for _, path := range paths {
		if raw, err := os.ReadFile(path); err == nil {
			if _, line, ok := strings.Cut(strings.TrimSpace(string(raw)), "\n[]byte("); ok {
				if s, err := strconv.Unquote(strings.TrimSuffix(line, ")")); err == nil {
					f.Add([]byte(s))
				}
			}
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var in chunkJobIn
		got, err := readMembers(data, in.fields())
		want, wantErr := oldMembers(data)
		if (err == nil) != (wantErr == nil) || err != nil && err.Error() != wantErr.Error() {
			t.Fatalf("%q: the one pass says %v, the old checks %v", data, err, wantErr)
		}
		if len(got) != len(want) {
			t.Fatalf("%q: %d members, want %d", data, len(got), len(want))
		}
		for i := range got {
			if got[i].key != want[i].key || string(got[i].value) != string(want[i].value) {
				t.Fatalf("%q: member %d is %q=%s, want %q=%s", data, i, got[i].key, got[i].value, want[i].key, want[i].value)
			}
			var s string
			if got[i].isText && (json.Unmarshal(want[i].value, &s) != nil || got[i].text != s) {
				t.Fatalf("%q: member %d decodes to %q, want %s", data, i, got[i].text, want[i].value)
			}
		}
	})
}

// oldMembers is how a message was split before the one pass: its
// encoding checked, then split by encoding/json.
func oldMembers(data []byte) ([]member, error) {
	if err := checkEncoding(data); err != nil {
		return nil, err
	}
	return splitObject(data)
}
