package producer_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/rs/zerolog"

	"github.com/sluicehq/sluice/internal/content/corpus"
	"github.com/sluicehq/sluice/internal/dev/testenv"
	"github.com/sluicehq/sluice/internal/ingest/producer"
	"github.com/sluicehq/sluice/internal/platform/broker"
	"github.com/sluicehq/sluice/internal/store/runs"
	"github.com/sluicehq/sluice/pkg/classify"
	"github.com/sluicehq/sluice/pkg/messages"
)

// fileTree writes a tree like /usr/share/doc's, a hidden file and a
// symlink out of it, and returns its root and how many entries it holds.
func fileTree(t *testing.T) (string, int) {
	t.Helper()
	var gz bytes.Buffer
	z := gzip.NewWriter(&gz)
	_, _ = z.Write([]byte("changelog entries"))
	if err := z.Close(); err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	files := map[string]string{
		"common-licenses/Apache-2.0": "Apache License, Version 2.0",
		"common-licenses/CC0-1.0":    "Creative Commons Legal Code",
		"README":                     "read me first",
		"pkg/README.Debian":          "Debian notes",
		"pkg/guide.rst":              "Guide\n=====\n\nHow to use it.",
		"pkg/examples/main.go":       "package main\n\nfunc main() {}\n",
		"pkg/examples/tool.py":       "print('tool')\n",
		"pkg/examples/lib.c":         "int answer(void) { return 42; }\n",
		"pkg/data.csv":               "name,value\na,1\n",
		"pkg/data.json":              `{"name": "value"}`,
		"pkg/data.xml":               `<?xml version="1.0"?><data>value</data>`,
		"pkg/changelog.gz":           gz.String(),
		"pkg/manual.pdf":             "%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj\n<< >>\nendobj\n",
		"pkg/blob.bin":               "\x00\x01\x02\x03\xfe\xff\x00\x10\x00",
		"pkg/.hidden":                "hidden",
	}
	for name, content := range files {
		path := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	outside := filepath.Join(t.TempDir(), "passwd")
	if err := os.WriteFile(outside, []byte("root:x:0:0"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(root, "pkg/passwd")); err != nil {
		t.Fatal(err)
	}
	entries := 0
	if err := filepath.WalkDir(root, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			entries++
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return root, entries
}

// Every file a run meets is read, excluded by a visible rule, or parked
// as a document-level dead letter: the counts add up to the files of the
// tree, the run records them, the metric counts them, and a parked file's
// dead letter names its class, type and identity. Run again over the
// same tree, the counts are the same.
func TestEveryFileIsReadExcludedOrParked(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testenv.NewDatabase(t, testenv.WithDims(dims))
	_, js := testenv.NewJetStream(t, broker.Topology{})
	root, entries := fileTree(t)
	run := func() (producer.Summary, *producer.FileMetrics) {
		t.Helper()
		metrics := producer.NewFileMetrics(prometheus.NewRegistry())
		tally := &producer.FileTally{List: true, Metrics: metrics}
		r, err := corpus.NewReader(corpus.Config{Inputs: []string{root}, OnFile: tally.Observe})
		if err != nil {
			t.Fatal(err)
		}
		p, err := producer.New(producer.Config{SourceID: "docs"}, db.Pool, js, zerolog.Nop())
		if err != nil {
			t.Fatal(err)
		}
		p.Files = tally
		sum, err := p.Run(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		return sum, metrics
	}
	for i := range 2 {
		sum, metrics := run()
		f := sum.Files
		if f.Seen != entries || f.Read+f.ExcludedTotal()+f.Parked != f.Seen {
			t.Fatalf("run %d: files %+v for %d files in the tree; want seen = read + excluded + parked = %d", i+1, f, entries, entries)
		}
		want := runs.Files{Seen: entries, Read: 11, Parked: 3, Excluded: map[string]int{"hidden": 1, "symlink_outside_tree": 1}}
		if f.Read != want.Read || f.Parked != want.Parked || len(f.Excluded) != 2 ||
			f.Excluded["hidden"] != 1 || f.Excluded["symlink_outside_tree"] != 1 {
			t.Errorf("run %d: files %+v, want %+v", i+1, f, want)
		}
		if len(sum.ExcludedFiles) != 2 {
			t.Errorf("run %d: excluded files listed %+v", i+1, sum.ExcludedFiles)
		}
		stored, err := runs.ReadFiles(ctx, db.Pool, sum.RunID)
		if err != nil || stored == nil || stored.Seen != f.Seen || stored.Read != f.Read || stored.Parked != f.Parked || stored.Excluded["hidden"] != 1 {
			t.Errorf("run %d: recorded %+v (%v), want %+v", i+1, stored, err, f)
		}
		for outcome, n := range map[[2]string]int{{"read", ""}: 11, {"parked", classify.ClassUnsupportedFormat}: 3, {"excluded", "hidden"}: 1} {
			var m dto.Metric
			if err := metrics.Files.WithLabelValues(outcome[0], outcome[1]).Write(&m); err != nil {
				t.Fatal(err)
			}
			if got := m.GetCounter().GetValue(); int(got) != n {
				t.Errorf("run %d: sluice_producer_files_total%v = %v, want %d", i+1, outcome, got, n)
			}
		}
	}

	for native, code := range map[string]string{"pkg/manual.pdf": "pdf", "pkg/changelog.gz": "gzip", "pkg/blob.bin": "binary"} {
		docID := messages.DocID("docs", native)
		var raw, payload []byte
		if err := db.Pool.QueryRow(ctx, `
			SELECT o.payload, p.payload FROM outbox o JOIN dead_letter_payloads p ON p.outbox_id = o.id
			WHERE p.doc_id = $1`, docID).Scan(&raw, &payload); err != nil {
			t.Fatalf("%s: no dead letter: %v", native, err)
		}
		dl, err := messages.DecodeDeadLetter(raw)
		if err != nil {
			t.Fatal(err)
		}
		if dl.ErrorClass != classify.ClassUnsupportedFormat || dl.ErrorCode != code || dl.Stage != "produce" {
			t.Errorf("%s: dead letter %s/%s at %s: %s", native, dl.ErrorClass, dl.ErrorCode, dl.Stage, dl.ErrorDetail)
		}
		pf, err := messages.DecodeParkedFile(payload)
		if err != nil {
			t.Fatalf("%s: payload %q: %v", native, payload, err)
		}
		if pf.SourceNativeID != native || pf.Format != code || len(pf.SHA256) != 64 || pf.Bytes == 0 || pf.Path != filepath.Join(root, native) {
			t.Errorf("%s: payload %+v", native, pf)
		}
	}
	var detail string
	if err := db.Pool.QueryRow(ctx, `SELECT payload->>'error_detail' FROM outbox WHERE payload->>'source_native_id' = 'pkg/manual.pdf'`).Scan(&detail); err != nil {
		t.Fatal(err)
	}
	if detail != "no extractor for application/pdf configured" {
		t.Errorf("manual.pdf parked with %q", detail)
	}
}
