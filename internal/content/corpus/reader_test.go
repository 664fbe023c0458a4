package corpus

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// writeTree creates files under root; parent directories are made as needed.
func writeTree(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		path := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// readAll walks cfg and returns every document, failing on a walk error.
func readAll(t *testing.T, cfg Config) []Document {
	t.Helper()
	docs, err := tryReadAll(t, cfg)
	if err != nil {
		t.Fatalf("Walk: %v", err)
	}
	return docs
}

func tryReadAll(t *testing.T, cfg Config) ([]Document, error) {
	t.Helper()
	r, err := NewReader(cfg)
	if err != nil {
		t.Fatalf("NewReader: %v", err)
	}
	var docs []Document
	err = r.Walk(t.Context(), func(d Document) error {
		docs = append(docs, d)
		return nil
	})
	return docs, err
}

func ids(docs []Document) []string {
	out := make([]string, len(docs))
	for i, d := range docs {
		out[i] = d.NativeID
	}
	return out
}

func byID(t *testing.T, docs []Document, id string) Document {
	t.Helper()
	for _, d := range docs {
		if d.NativeID == id {
			return d
		}
	}
	t.Fatalf("no document %q among %q", id, ids(docs))
	return Document{}
}

func TestReaderDirectoryWalk(t *testing.T) {
	t.Parallel()

	root := t.TempDir()
	writeTree(t, root, map[string]string{
		"b.txt":              "bee",
		"a.md":               "# A",
		"sub/z.html":         "<p>zed</p>",
		"sub/deeper/c.txt":   "sea",
		"sub/a-first.txt":    "ay",
		"README":             "no extension",
		"image.png":          "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR",
		"data.csv":           "a,b",
		".hidden.txt":        "secret",
		".git/config":        "[core]",
		"sub/.cache/x.txt":   "cached",
		"UPPER.TXT":          "upper-case extension",
		"notes/2024/jan.txt": "january",
	})
	var skips []string
	docs := readAll(t, Config{
		Inputs: []string{root},
		OnFile: func(e FileEvent) {
			if e.Excluded != "" {
				rel, _ := filepath.Rel(root, e.Path)
				skips = append(skips, filepath.ToSlash(rel)+": "+string(e.Excluded))
			}
		},
	})

	want := []string{"README", "UPPER.TXT", "a.md", "b.txt", "data.csv", "image.png", "notes/2024/jan.txt", "sub/a-first.txt", "sub/deeper/c.txt", "sub/z.html"}
	if got := ids(docs); !slices.Equal(got, want) {
		t.Errorf("native ids = %q\nwant %q", got, want)
	}
	wantSkips := []string{".git: hidden", ".hidden.txt: hidden", "sub/.cache: hidden"}
	if !slices.Equal(skips, wantSkips) {
		t.Errorf("skips = %q\nwant %q", skips, wantSkips)
	}
	if png := byID(t, docs, "image.png"); png.Status != StatusUnsupported || !errors.Is(png.Err, ErrUnsupportedFormat) {
		t.Errorf("image.png = %+v; want it unsupported, not skipped", png)
	}

	md := byID(t, docs, "a.md")
	if md.Status != StatusOK || md.Text != "# A" || md.Codec != CodecUTF8 || md.Size != 3 {
		t.Errorf("a.md = %+v", md)
	}
	wantMeta := map[string]any{"path": "a.md", "format": "markdown", "codec": "utf-8", "bytes": int64(3)}
	if !mapsEqual(md.Metadata, wantMeta) {
		t.Errorf("a.md metadata = %v, want %v", md.Metadata, wantMeta)
	}
	if z := byID(t, docs, "sub/z.html"); z.Text != "zed" || z.Metadata["format"] != "html" {
		t.Errorf("sub/z.html = %+v", z)
	}
}

func mapsEqual(a, b map[string]any) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func TestReaderDocumentStatuses(t *testing.T) {
	t.Parallel()

	root := t.TempDir()
	writeTree(t, root, map[string]string{
		"utf8.txt":        "h\u00e9llo",
		"bom.txt":         "\xEF\xBB\xBFwith bom",
		"legacy.txt":      "caf\xe9 na\xefve \x93quoted\x94",
		"crlf.txt":        "one\r\ntwo\r\n",
		"binary.txt":      "\x7fELF\x02\x01\x01\x00\x00\x00",
		"undefined.txt":   "abc\x81",
		"empty.txt":       "",
		"blank.md":        " \n\t\r\n  ",
		"only-tags.html":  "<html><head><title>Nothing</title></head><body><script>x()</script></body></html>",
		"page.html":       "<title>Page</title><p>one</p><p>two &amp; three</p>",
		"legacy.html":     "<p>na\xefve</p>",
		"bom-legacy.txt":  "\xEF\xBB\xBFcaf\xe9",
		"utf16.txt":       "\xFF\xFEh\x00i\x00",
		"undefined-2.txt": "\x8D",
	})
	docs := readAll(t, Config{Inputs: []string{root}})

	tests := []struct {
		id         string
		wantStatus Status
		wantText   string
		wantCodec  string
		wantErr    error
	}{
		{"utf8.txt", StatusOK, "h\u00e9llo", CodecUTF8, nil},
		{"bom.txt", StatusOK, "with bom", CodecUTF8, nil},
		{"legacy.txt", StatusOK, "café naïve “quoted”", CodecWindows1252, nil},
		{"crlf.txt", StatusOK, "one\ntwo\n", CodecUTF8, nil},
		{"binary.txt", StatusUnsupported, "", "", ErrUnsupportedFormat},
		{"undefined.txt", StatusUndecodable, "", "", ErrUndecodable},
		{"undefined-2.txt", StatusUndecodable, "", "", ErrUndecodable},
		{"empty.txt", StatusEmpty, "", CodecUTF8, ErrEmpty},
		{"blank.md", StatusEmpty, "", CodecUTF8, ErrEmpty},
		{"only-tags.html", StatusEmpty, "", CodecUTF8, ErrEmpty},
		{"page.html", StatusOK, "one\n\ntwo & three", CodecUTF8, nil},
		{"legacy.html", StatusOK, "naïve", CodecWindows1252, nil},
		{"bom-legacy.txt", StatusOK, "café", CodecWindows1252, nil},
		{"utf16.txt", StatusOK, "hi", CodecUTF16LE, nil},
	}
	if len(docs) != len(tests) {
		t.Fatalf("got %d documents %q, want %d: none may be dropped", len(docs), ids(docs), len(tests))
	}
	for _, tt := range tests {
		d := byID(t, docs, tt.id)
		if d.Status != tt.wantStatus || d.Text != tt.wantText || d.Codec != tt.wantCodec {
			t.Errorf("%s: status %q text %q codec %q; want %q %q %q", tt.id, d.Status, d.Text, d.Codec, tt.wantStatus, tt.wantText, tt.wantCodec)
		}
		if tt.wantErr == nil && d.Err != nil || tt.wantErr != nil && !errors.Is(d.Err, tt.wantErr) {
			t.Errorf("%s: Err = %v, want %v", tt.id, d.Err, tt.wantErr)
		}
		if d.Metadata["path"] != tt.id {
			t.Errorf("%s: metadata path = %v", tt.id, d.Metadata["path"])
		}
		if tt.wantCodec != "" && d.Metadata["codec"] != tt.wantCodec {
			t.Errorf("%s: metadata codec = %v, want %v", tt.id, d.Metadata["codec"], tt.wantCodec)
		}
	}
	if got := byID(t, docs, "page.html").Metadata["title"]; got != "Page" {
		t.Errorf("page.html title = %v, want Page", got)
	}
	if got := byID(t, docs, "only-tags.html").Metadata["title"]; got != "Nothing" {
		t.Errorf("only-tags.html title = %v, want Nothing", got)
	}
	if got := byID(t, docs, "binary.txt").Size; got != 10 {
		t.Errorf("binary.txt Size = %d, want 10", got)
	}
}

func TestReaderSingleFileInputs(t *testing.T) {
	t.Parallel()

	root := t.TempDir()
	writeTree(t, root, map[string]string{
		"deep/dir/notes.csv": "a,b\n1,2",
		"deep/page.htm":      "<p>x</p>",
		".hidden.txt":        "named, so read",
	})
	docs := readAll(t, Config{Inputs: []string{
		filepath.Join(root, "deep/dir/notes.csv"),
		filepath.Join(root, "deep/page.htm"),
		filepath.Join(root, ".hidden.txt"),
	}})
	if got, want := ids(docs), []string{"notes.csv", "page.htm", ".hidden.txt"}; !slices.Equal(got, want) {
		t.Fatalf("native ids = %q, want %q", got, want)
	}
	if d := docs[0]; d.Status != StatusOK || d.Text != "a,b\n1,2" || d.Metadata["format"] != "csv" {
		t.Errorf("a named CSV file is read as text: %+v", d)
	}
	if d := docs[1]; d.Text != "x" || d.Metadata["format"] != "html" {
		t.Errorf("page.htm = %+v", d)
	}
}

func TestReaderMissingInput(t *testing.T) {
	t.Parallel()

	root := t.TempDir()
	writeTree(t, root, map[string]string{"a.txt": "a"})
	docs, err := tryReadAll(t, Config{Inputs: []string{root, filepath.Join(root, "missing")}})
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Walk error = %v, want fs.ErrNotExist", err)
	}
	if len(docs) != 0 {
		t.Errorf("yielded %q before reporting the missing input", ids(docs))
	}
}

func TestReaderTooLarge(t *testing.T) {
	t.Parallel()

	root := t.TempDir()
	writeTree(t, root, map[string]string{"big.txt": strings.Repeat("x", 101), "fits.txt": strings.Repeat("y", 100)})
	docs := readAll(t, Config{Inputs: []string{root}, MaxDocumentBytes: 100})
	big := byID(t, docs, "big.txt")
	var tooLarge *TooLargeError
	if big.Status != StatusInvalid || !errors.As(big.Err, &tooLarge) || tooLarge.Size != 101 || tooLarge.Limit != 100 {
		t.Errorf("big.txt = %+v", big)
	}
	if big.Size != 101 || big.Metadata["bytes"] != int64(101) {
		t.Errorf("big.txt size = %d, metadata %v", big.Size, big.Metadata)
	}
	if fits := byID(t, docs, "fits.txt"); fits.Status != StatusOK {
		t.Errorf("fits.txt = %+v", fits)
	}
}

func TestReaderStdin(t *testing.T) {
	t.Parallel()

	t.Run("text", func(t *testing.T) {
		t.Parallel()
		docs := readAll(t, Config{Inputs: []string{"-"}, Stdin: strings.NewReader("from\r\nstdin \x93x\x94")})
		if len(docs) != 1 {
			t.Fatalf("got %d documents", len(docs))
		}
		d := docs[0]
		if d.NativeID != "stdin" || d.Status != StatusOK || d.Text != "from\nstdin “x”" || d.Codec != CodecWindows1252 {
			t.Errorf("stdin document = %+v", d)
		}
	})
	t.Run("named", func(t *testing.T) {
		t.Parallel()
		docs := readAll(t, Config{Inputs: []string{"-"}, StdinName: "clipboard", Stdin: strings.NewReader("x")})
		if got := ids(docs); !slices.Equal(got, []string{"clipboard"}) {
			t.Errorf("native ids = %q", got)
		}
	})
	t.Run("too large", func(t *testing.T) {
		t.Parallel()
		docs := readAll(t, Config{Inputs: []string{"-"}, MaxDocumentBytes: 4, Stdin: strings.NewReader("12345")})
		if len(docs) != 1 || docs[0].Status != StatusInvalid || !errors.Is(docs[0].Err, ErrTooLarge) {
			t.Errorf("documents = %+v", docs)
		}
	})
	t.Run("jsonl", func(t *testing.T) {
		t.Parallel()
		docs := readAll(t, Config{Inputs: []string{"-"}, JSONL: true, Stdin: strings.NewReader(
			`{"id":"a","text":"alpha"}` + "\n" + `{"id":"b"}` + "\n")})
		if got, want := ids(docs), []string{"a", "b"}; !slices.Equal(got, want) {
			t.Fatalf("native ids = %q, want %q", got, want)
		}
		var le *LineError
		if docs[1].Status != StatusInvalid || !errors.As(docs[1].Err, &le) || le.Name != "stdin" || le.Line != 2 {
			t.Errorf("second line = %+v", docs[1])
		}
	})
}

// The reader yields a native id as often as it reads it: which one keeps
// it is the producer's decision (producer.ErrDuplicateID), made against
// what its run recorded rather than a set in memory.
func TestReaderYieldsRepeatedIDs(t *testing.T) {
	t.Parallel()

	one, two := t.TempDir(), t.TempDir()
	writeTree(t, one, map[string]string{"README.md": "first"})
	writeTree(t, two, map[string]string{"README.md": "second"})
	docs := readAll(t, Config{Inputs: []string{one, two}})
	if got, want := ids(docs), []string{"README.md", "README.md"}; !slices.Equal(got, want) {
		t.Fatalf("native ids = %q, want %q", got, want)
	}
	if docs[0].Text != "first" || docs[1].Text != "second" || docs[1].Status != StatusOK {
		t.Errorf("documents = %+v", docs)
	}
}

func TestReaderSymlinks(t *testing.T) {
	t.Parallel()

	outside := t.TempDir()
	writeTree(t, outside, map[string]string{"secret.txt": "outside"})
	root := t.TempDir()
	writeTree(t, root, map[string]string{"real/doc.txt": "inside"})
	links := map[string]string{
		"alias.txt":   filepath.Join(root, "real/doc.txt"),
		"escape.txt":  filepath.Join(outside, "secret.txt"),
		"dirlink":     filepath.Join(root, "real"),
		"dangling.md": filepath.Join(root, "nope"),
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(root, name)); err != nil {
			t.Skipf("symlinks unsupported: %v", err)
		}
	}
	skips := map[string]Exclusion{}
	docs := readAll(t, Config{Inputs: []string{root}, OnFile: func(e FileEvent) {
		skips[filepath.Base(e.Path)] = e.Excluded
	}})
	if got, want := ids(docs), []string{"alias.txt", "real/doc.txt"}; !slices.Equal(got, want) {
		t.Errorf("native ids = %q, want %q", got, want)
	}
	if docs[0].Text != "inside" {
		t.Errorf("alias.txt = %+v", docs[0])
	}
	wantSkips := map[string]Exclusion{"escape.txt": ExcludedOutsideRoot, "dirlink": ExcludedSymlinkDir, "dangling.md": ExcludedDanglingLink}
	for name, reason := range wantSkips {
		if skips[name] != reason {
			t.Errorf("%s skipped for %q, want %q", name, skips[name], reason)
		}
	}

	// A root given through a symlink is walked where it points.
	via := filepath.Join(t.TempDir(), "via")
	if err := os.Symlink(root, via); err != nil {
		t.Fatal(err)
	}
	if got := ids(readAll(t, Config{Inputs: []string{via}})); !slices.Equal(got, []string{"alias.txt", "real/doc.txt"}) {
		t.Errorf("through a symlinked root: native ids = %q", got)
	}
}

func TestReaderStops(t *testing.T) {
	t.Parallel()

	root := t.TempDir()
	writeTree(t, root, map[string]string{"a.txt": "a", "b.txt": "b", "c.jsonl": `{"id":"x","text":"x"}`})

	t.Run("callback error", func(t *testing.T) {
		t.Parallel()
		r, err := NewReader(Config{Inputs: []string{root}})
		if err != nil {
			t.Fatal(err)
		}
		stop := errors.New("stop")
		calls := 0
		err = r.Walk(t.Context(), func(Document) error {
			calls++
			return stop
		})
		if err != stop || calls != 1 {
			t.Errorf("Walk = %v after %d calls; want the callback's error after 1", err, calls)
		}
	})
	t.Run("context", func(t *testing.T) {
		t.Parallel()
		r, err := NewReader(Config{Inputs: []string{root}})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		calls := 0
		err = r.Walk(ctx, func(Document) error {
			calls++
			cancel()
			return nil
		})
		if !errors.Is(err, context.Canceled) || calls != 1 {
			t.Errorf("Walk = %v after %d calls; want context.Canceled after 1", err, calls)
		}
	})
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name    string
		cfg     Config
		wantErr string
	}{
		{"ok", Config{Inputs: []string{"a"}}, ""},
		{"no inputs", Config{}, "no inputs"},
		{"empty input", Config{Inputs: []string{""}}, "empty input name"},
		{"stdin twice", Config{Inputs: []string{"-", "-"}}, "more than once"},
		{"unknown format", Config{Inputs: []string{"a"}, Formats: []string{"rest"}}, `format "rest": use one of text, markdown`},
		{"bad glob", Config{Inputs: []string{"a"}, Exclude: []string{"[a-"}}, `pattern "[a-"`},
		{"partial doublestar", Config{Inputs: []string{"a"}, Include: []string{"docs/a**/x"}}, `whole path segment`},
		{"negative file size", Config{Inputs: []string{"a"}, MaxFileBytes: -1}, "max file bytes"},
		{"negative size", Config{Inputs: []string{"a"}, MaxDocumentBytes: -1}, "max document bytes"},
		{"negative line", Config{Inputs: []string{"a"}, MaxLineBytes: -1}, "max line bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := tt.cfg.Validate()
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("Validate = %v, want nil", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("Validate = %v, want it to mention %q", err, tt.wantErr)
			}
			if _, nerr := NewReader(tt.cfg); (nerr == nil) != (err == nil) {
				t.Errorf("NewReader disagrees with Validate: %v", nerr)
			}
		})
	}
}
