package corpus

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"unicode"
)

// Walker yields documents one at a time, in the order of its source.
// The producer runs over a Walker: a Reader for files and JSONL, or a
// source that lists objects or rows. Walk calls fn with every document,
// those that cannot be used included (see Document), stops with fn's
// error unchanged, and returns ctx.Err() once ctx is done.
type Walker interface {
	Walk(ctx context.Context, fn func(Document) error) error
}

var _ Walker = (*Reader)(nil)

// Reader yields the documents of a fixed set of inputs.
type Reader struct {
	cfg              Config
	include, exclude []Glob
}

// NewReader validates cfg, applies its defaults and returns a Reader.
func NewReader(cfg Config) (*Reader, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.applyDefaults()
	r := &Reader{cfg: cfg}
	for _, p := range cfg.Include {
		g, _ := ParseGlob(p) // checked by Validate
		r.include = append(r.include, g)
	}
	for _, p := range cfg.Exclude {
		g, _ := ParseGlob(p)
		r.exclude = append(r.exclude, g)
	}
	return r, nil
}

// Walk calls fn with every document of the inputs, in order: inputs as
// listed, each directory depth-first with the entries of every directory
// in byte order of their names, each JSONL input line by line. The same
// tree yields the same documents in the same order. Stdin is consumed by
// the first Walk that reads it.
//
// Documents that cannot be used are yielded too, with a Status other than
// StatusOK; see Document. Walk does not check that native ids are unique:
// the same relative path under two inputs, or an id repeated in JSONL, is
// yielded each time, and the caller decides which keeps the id (the
// producer checks against what its run has recorded). Walk's memory does
// not grow with the number of documents.
//
// Walk checks that every input exists before it yields anything, and
// returns an error wrapping fs.ErrNotExist (or the file system's error) when
// one does not. It also stops with an error when a directory cannot be
// listed or a stream fails mid-way, when ctx is done (returning ctx.Err()),
// and when fn returns an error, which it returns unchanged.
func (r *Reader) Walk(ctx context.Context, fn func(Document) error) error {
	for _, in := range r.cfg.Inputs {
		if in == Stdin {
			continue
		}
		if _, err := os.Stat(in); err != nil {
			return fmt.Errorf("corpus: input %q: %w", in, err)
		}
	}
	w := newWalk(ctx, fn, r.cfg)
	defer w.cancel()
	w.include, w.exclude = r.include, r.exclude
	for _, in := range r.cfg.Inputs {
		if err := w.input(in); err != nil {
			return w.end(err)
		}
	}
	return w.end(nil)
}

// walk is the state of one Walk.
type walk struct {
	ctx              context.Context
	cancel           context.CancelFunc
	fn               func(Document) error
	cfg              Config
	include, exclude []Glob
	// ahead are the files being extracted ahead of the walk, oldest
	// first (extractAhead).
	ahead []*pending
}

// newWalk starts a walk yielding to fn; call its end, then its cancel.
func newWalk(ctx context.Context, fn func(Document) error, cfg Config) *walk {
	ctx, cancel := context.WithCancel(ctx)
	return &walk{ctx: ctx, cancel: cancel, fn: fn, cfg: cfg}
}

func (w *walk) input(in string) error {
	if in == Stdin {
		if w.cfg.JSONL {
			if err := w.onFile(FileEvent{Path: Stdin, Records: true}); err != nil {
				return err
			}
			return w.jsonl(w.cfg.StdinName, w.cfg.Stdin)
		}
		if err := w.onFile(FileEvent{Path: Stdin}); err != nil {
			return err
		}
		meta := map[string]any{"path": Stdin}
		return w.emit(w.stream(w.cfg.StdinName, Stdin, meta, nil, w.cfg.Stdin, -1))
	}
	info, err := os.Stat(in)
	if err != nil {
		return fmt.Errorf("corpus: input %q: %w", in, err)
	}
	if info.IsDir() {
		return w.dir(in)
	}
	return w.file(in, in, filepath.Base(in), true)
}

// emit yields doc after the files in flight before it, unless ctx is
// done.
func (w *walk) emit(doc Document) error {
	if err := w.drain(); err != nil {
		return err
	}
	return w.yield(doc)
}

// yield gives doc to the walk's function, unless ctx is done.
func (w *walk) yield(doc Document) error {
	if err := w.ctx.Err(); err != nil {
		return err
	}
	return w.fn(doc)
}

// finish sets the status of a document whose text was decoded.
func finish(doc Document, text string) Document {
	if strings.TrimFunc(text, unicode.IsSpace) == "" {
		doc.Status, doc.Err = StatusEmpty, ErrEmpty
		return doc
	}
	doc.Text, doc.Status = text, StatusOK
	return doc
}

// File yields the document, or a JSONL file's documents, of the one file
// at path, as a walk of a directory yields its files: under native id
// id, the user knowing it as shown. A source that copies its documents
// to files (an object store) reads them through it. cfg's Inputs,
// Include and Exclude are not read.
func File(ctx context.Context, cfg Config, path, shown, id string, fn func(Document) error) error {
	cfg.applyDefaults()
	w := newWalk(ctx, fn, cfg)
	defer w.cancel()
	return w.end(w.file(path, shown, id, false))
}
