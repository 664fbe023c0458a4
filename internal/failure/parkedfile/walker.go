package parkedfile

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/sluicehq/sluice/internal/content/corpus"
	"github.com/sluicehq/sluice/internal/ingest/producer"
	"github.com/sluicehq/sluice/internal/store/deadletter"
	"github.com/sluicehq/sluice/pkg/messages"
)

// walker yields the one document a replay reads: the kept bytes, written
// to a private temporary file and read by corpus as the producer reads
// a file, under the document's own native id and path; or keyed text.
type walker struct {
	scope Scope
	pf    messages.ParkedFile
	opts  Options
	// dir holds path, the kept bytes' copy; both empty for keyed text.
	dir, path string
	// last is the document yielded.
	last corpus.Document
	// files accounts for the one file the replay reads, for the run's
	// counts.
	files *producer.FileTally
}

var _ corpus.Walker = (*walker)(nil)

// walker returns the walker of the replay of s.
func (r *Replayer) walker(ctx context.Context, s Scope, pf messages.ParkedFile, opts Options) (*walker, error) {
	w := &walker{scope: s, pf: pf, opts: opts, files: &producer.FileTally{}}
	if opts.Text != nil {
		return w, nil
	}
	data, _, err := deadletter.KeptBytes(ctx, r.pool, s.DeadLetterID)
	if err != nil {
		return nil, err
	}
	if w.dir, err = os.MkdirTemp("", "sluice-parked-*"); err != nil {
		return nil, fmt.Errorf("copy the kept bytes: %w", err)
	}
	// The file keeps its name: text formats are told apart by it.
	name := filepath.Base(filepath.FromSlash(s.SourceNativeID))
	if name == "." || name == string(filepath.Separator) || name == ".." {
		name = "file"
	}
	w.path = filepath.Join(w.dir, name)
	if err := os.WriteFile(w.path, data, 0o600); err != nil {
		w.close()
		return nil, fmt.Errorf("copy the kept bytes: %w", err)
	}
	return w, nil
}

// Walk implements corpus.Walker.
func (w *walker) Walk(ctx context.Context, fn func(corpus.Document) error) error {
	if w.opts.Text != nil {
		text := *w.opts.Text
		w.last = corpus.Document{NativeID: w.scope.SourceNativeID, Text: text, Status: corpus.StatusOK, Codec: "utf-8",
			Size: int64(len(text)), Metadata: map[string]any{"path": w.scope.SourceNativeID, "format": "text", "origin": producer.KeyedOrigin}}
		w.files.Observe(corpus.FileEvent{Path: w.scope.SourceNativeID})
		return fn(w.last)
	}
	r, err := corpus.NewReader(corpus.Config{Inputs: []string{w.path}, Formats: w.opts.Formats,
		MaxDocumentBytes: w.opts.MaxDocumentBytes, Extractor: w.opts.extractor(), OnFile: w.files.Observe})
	if err != nil {
		return err
	}
	return r.Walk(ctx, func(d corpus.Document) error {
		d.NativeID = w.scope.SourceNativeID
		if d.Metadata != nil {
			d.Metadata["path"] = w.scope.SourceNativeID
		}
		d.File = w.pf.Path
		if d.File == "" {
			d.File = w.scope.SourceNativeID
		}
		w.last = d
		return fn(d)
	})
}

// open opens the kept bytes' copy, whatever path the producer names:
// the producer keeps the bytes of what fails again from it.
func (w *walker) open(string) (io.ReadCloser, error) { return os.Open(w.path) }

// class is the class the document yielded is parked in.
func (w *walker) class() string { return producer.ParkedClass(w.last) }

// close removes the copy.
func (w *walker) close() {
	if w.dir != "" {
		_ = os.RemoveAll(w.dir)
	}
}
