package corpus

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/sluicehq/sluice/internal/content/extract"
)

// accounting is what a walk reported of every file it met.
type accounting struct {
	events   []FileEvent
	excluded map[string]Exclusion // by path relative to the root
	docs     map[string]Document  // whole-file documents by path relative to the root
}

func account(t *testing.T, root string, cfg Config) accounting {
	t.Helper()
	a := accounting{excluded: map[string]Exclusion{}, docs: map[string]Document{}}
	cfg.Inputs = []string{root}
	cfg.OnFile = func(e FileEvent) { a.events = append(a.events, e) }
	for _, d := range readAll(t, cfg) {
		rel, _ := filepath.Rel(root, d.File)
		a.docs[filepath.ToSlash(rel)] = d
	}
	for _, e := range a.events {
		if e.Excluded != "" {
			rel, _ := filepath.Rel(root, e.Path)
			a.excluded[filepath.ToSlash(rel)] = e.Excluded
		}
	}
	return a
}

func gzipped(t *testing.T, s string) string {
	t.Helper()
	var b bytes.Buffer
	z := gzip.NewWriter(&b)
	if _, err := z.Write([]byte(s)); err != nil {
		t.Fatal(err)
	}
	if err := z.Close(); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// Every file a walk meets is reported once, and is either excluded by a
// rule or yielded as exactly one document: a dotted name is no extension,
// source code and data files are text, a document format with no
// extractor and unknown binary are unsupported (never undecodable).
func TestReaderAccountsForEveryFile(t *testing.T) {
	t.Parallel()
	outside := t.TempDir()
	writeTree(t, outside, map[string]string{"secret.txt": "outside"})
	root := t.TempDir()
	files := map[string]string{
		"licenses/Apache-2.0": "Apache License\nVersion 2.0",
		"licenses/GFDL-1.3":   "GNU Free Documentation License",
		"README":              "read me",
		"README.Debian":       "notes for Debian",
		"guide.rst":           "Title\n=====\n",
		"src/main.go":         "package main\n\nfunc main() {}\n",
		"src/tool.py":         "print('hi')\n",
		"src/lib.c":           "int main(void) { return 0; }\n",
		"data/table.csv":      "a,b\n1,2\n",
		"data/config.json":    `{"a": 1}`,
		"data/feed.xml":       `<?xml version="1.0"?><feed/>`,
		"changelog.gz":        gzipped(t, "changes"),
		"manual.pdf":          "%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj\n",
		"blob.bin":            "\x00\x01\x02\x03\xfe\xff\x00\x10",
		".hidden":             "dot file",
		"vendor/dep/dep.go":   "package dep\n",
		"notes/draft.md":      "# draft",
	}
	writeTree(t, root, files)
	if err := os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(root, "escape.txt")); err != nil {
		t.Fatal(err)
	}
	a := account(t, root, Config{Exclude: []string{"vendor/**"}})

	if got, want := len(a.events), len(files)+1; got != want { // + the symlink; vendor/ replaces the one file under it
		t.Errorf("%d events for %d entries: %+v", got, want, a.events)
	}
	wantExcluded := map[string]Exclusion{".hidden": ExcludedHidden, "escape.txt": ExcludedOutsideRoot, "vendor": ExcludedGlob}
	if len(a.excluded) != len(wantExcluded) {
		t.Errorf("excluded = %v, want %v", a.excluded, wantExcluded)
	}
	for p, r := range wantExcluded {
		if a.excluded[p] != r {
			t.Errorf("%s excluded as %q, want %q", p, a.excluded[p], r)
		}
	}
	if len(a.docs)+len(a.excluded) != len(a.events) {
		t.Errorf("%d documents + %d excluded != %d files met", len(a.docs), len(a.excluded), len(a.events))
	}
	for _, p := range []string{"licenses/Apache-2.0", "licenses/GFDL-1.3", "README", "README.Debian", "guide.rst",
		"src/main.go", "src/tool.py", "src/lib.c", "data/table.csv", "data/config.json", "data/feed.xml", "notes/draft.md"} {
		if d := a.docs[p]; d.Status != StatusOK || d.Text == "" || d.SHA256 == "" {
			t.Errorf("%s = status %q err %v; want it read as text", p, d.Status, d.Err)
		}
	}
	for p, format := range map[string]string{"changelog.gz": "gzip", "manual.pdf": "pdf", "blob.bin": "binary"} {
		d := a.docs[p]
		var ue *UnsupportedError
		if d.Status != StatusUnsupported || !errors.As(d.Err, &ue) || string(d.Detected.Format) != format {
			t.Errorf("%s = status %q err %v detected %+v; want unsupported %s", p, d.Status, d.Err, d.Detected, format)
			continue
		}
		if d.SHA256 == "" || d.Size != int64(len(files[p])) {
			t.Errorf("%s: sha256 %q size %d; want the file's identity", p, d.SHA256, d.Size)
		}
	}
	if msg := a.docs["manual.pdf"].Err.Error(); msg != "no extractor for application/pdf configured" {
		t.Errorf("manual.pdf: %q", msg)
	}
}

// Include, Formats and MaxFileBytes narrow what is read, each under its
// own reason, and a configured Extractor reads what Detect calls a
// document.
func TestReaderRules(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	writeTree(t, root, map[string]string{
		"a.md": "# a", "b.txt": "b", "big.txt": "0123456789abcdef", "sub/c.md": "# c",
		"doc.pdf": "%PDF-1.4\n%\xe2\xe3\xcf\xd3\n",
	})
	a := account(t, root, Config{Include: []string{"*.md", "*.pdf", "big.txt"}, Formats: []string{"markdown", "pdf"}, MaxFileBytes: 15,
		Extractor: extractorFunc(func(path string) (string, error) { return "extracted from " + filepath.Base(path), nil })})
	want := map[string]Exclusion{"b.txt": ExcludedNotIncluded, "big.txt": ExcludedSize}
	if !mapsEqualExclusions(a.excluded, want) {
		t.Errorf("excluded = %v, want %v", a.excluded, want)
	}
	if got := slices.Sorted(mapsKeys(a.docs)); !slices.Equal(got, []string{"a.md", "doc.pdf", "sub/c.md"}) {
		t.Errorf("read %q", got)
	}
	if d := a.docs["doc.pdf"]; d.Status != StatusOK || d.Text != "extracted from doc.pdf" {
		t.Errorf("doc.pdf = %+v", d)
	}
	a = account(t, root, Config{Formats: []string{"text"}})
	for _, p := range []string{"a.md", "sub/c.md", "doc.pdf"} {
		if a.excluded[p] != ExcludedFormat {
			t.Errorf("%s excluded as %q, want %q", p, a.excluded[p], ExcludedFormat)
		}
	}
}

type extractorFunc func(path string) (string, error)

func (f extractorFunc) Extract(_ context.Context, path string, _ extract.Detection) (*extract.Document, error) {
	text, err := f(path)
	if err != nil {
		return nil, err
	}
	return &extract.Document{Sections: []extract.Section{{Text: text}}}, nil
}

func mapsEqualExclusions(a, b map[string]Exclusion) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func mapsKeys(m map[string]Document) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func TestGlobMatch(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		pattern, path string
		want          bool
	}{
		{"*.gz", "a/b/changelog.gz", true},
		{"*.gz", "a.gzip", false},
		{"vendor/**", "vendor/x/y.go", true},
		{"vendor/**", "src/vendor/y.go", false},
		{"**/testdata/*.json", "testdata/a.json", true},
		{"**/testdata/*.json", "a/b/testdata/a.json", true},
		{"**/testdata/*.json", "a/testdata/b/a.json", false},
		{"docs/*.md", "docs/a.md", true},
		{"docs/*.md", "docs/sub/a.md", false},
		{"docs/**/*.md", "docs/a.md", true},
		{"**", "anything/at/all", true},
	} {
		g, err := ParseGlob(tc.pattern)
		if err != nil {
			t.Fatal(err)
		}
		if got := g.Match(tc.path); got != tc.want {
			t.Errorf("%q matches %q = %v, want %v", tc.pattern, tc.path, got, tc.want)
		}
	}
}
