package corpus

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

// Every reader refuses input over its limit with an error naming the
// limit and the setting that raises it, and goes on with the next input
// or record.
func TestReaderLimitsNameTheSetting(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("x", 200)
	record := func(id, text string) string { return `{"id":"` + id + `","text":"` + text + `"}` + "\n" }
	for _, tc := range []struct {
		name    string
		files   map[string]string // written under a directory given as input
		stdin   string            // read when files is nil
		jsonl   bool
		cfg     Config
		tooBig  string // native id of the refused document
		setting string
		after   string // native id of a document that must still be read
	}{
		{
			name:  "text file",
			files: map[string]string{"a.txt": big, "b.txt": "fine"},
			cfg:   Config{MaxDocumentBytes: 100}, tooBig: "a.txt", setting: SettingMaxDocumentBytes, after: "b.txt",
		},
		{
			name:  "html file",
			files: map[string]string{"a.html": "<p>" + big + "</p>", "b.html": "<p>fine</p>"},
			cfg:   Config{MaxDocumentBytes: 100}, tooBig: "a.html", setting: SettingMaxDocumentBytes, after: "b.html",
		},
		{
			name:  "jsonl record",
			files: map[string]string{"r.jsonl": record("big", big) + record("small", "fine")},
			cfg:   Config{MaxLineBytes: 100}, tooBig: "r.jsonl#L1", setting: SettingMaxLineBytes, after: "small",
		},
		{
			name:  "stdin text",
			stdin: big,
			cfg:   Config{MaxDocumentBytes: 100}, tooBig: "stdin", setting: SettingMaxDocumentBytes,
		},
		{
			name:  "stdin jsonl record",
			stdin: record("big", big) + record("small", "fine"), jsonl: true,
			cfg: Config{MaxLineBytes: 100}, tooBig: "stdin#L1", setting: SettingMaxLineBytes, after: "small",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := tc.cfg
			cfg.JSONL = tc.jsonl
			if tc.files != nil {
				root := t.TempDir()
				writeTree(t, root, tc.files)
				cfg.Inputs = []string{filepath.Clean(root)}
			} else {
				cfg.Inputs, cfg.Stdin = []string{Stdin}, strings.NewReader(tc.stdin)
			}
			docs := readAll(t, cfg)
			refused := byID(t, docs, tc.tooBig)
			if refused.Status != StatusInvalid || !errors.Is(refused.Err, ErrTooLarge) {
				t.Fatalf("%s = %+v; want invalid and too large", tc.tooBig, refused)
			}
			msg := refused.Err.Error()
			if !strings.Contains(msg, "limit of 100 bytes") || !strings.Contains(msg, "raise "+tc.setting) {
				t.Errorf("error %q does not name the limit and %s", msg, tc.setting)
			}
			if tc.after != "" {
				if d := byID(t, docs, tc.after); d.Status != StatusOK || d.Text != "fine" {
					t.Errorf("%s after the refused input = %+v; want it read", tc.after, d)
				}
			}
		})
	}
}
