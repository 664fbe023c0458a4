package corpus

import (
	"context"
	"fmt"
	"hash/maphash"
	"os"
	"path/filepath"
	"strings"
	"unicode"
)

// Reader yields the documents of a fixed set of inputs.
type Reader struct {
	cfg Config
}

// NewReader validates cfg, applies its defaults and returns a Reader.
func NewReader(cfg Config) (*Reader, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.applyDefaults()
	return &Reader{cfg: cfg}, nil
}

// Walk calls fn with every document of the inputs, in order: inputs as
// listed, each directory depth-first with the entries of every directory
// in byte order of their names, each JSONL input line by line. The same
// tree yields the same documents in the same order. Stdin is consumed by
// the first Walk that reads it.
//
// Documents that cannot be used are yielded too, with a Status other than
// StatusOK; see Document. Native ids are unique within one Walk: a document
// whose id was already yielded — the same relative path under two inputs,
// an id repeated in JSONL — is yielded with StatusInvalid and an Err
// matching ErrDuplicateID under a derived id ("<id>#dup2" for a file,
// "<name>#L<line>" for a JSONL line), so that the first keeps its id. This
// costs memory proportional to the number of documents.
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
	w := &walk{ctx: ctx, fn: fn, cfg: r.cfg, seed: maphash.MakeSeed(), seen: make(map[uint64]struct{})}
	for _, in := range r.cfg.Inputs {
		if err := w.input(in); err != nil {
			return err
		}
	}
	return nil
}

// walk is the state of one Walk.
type walk struct {
	ctx context.Context
	fn  func(Document) error
	cfg Config
	// seen holds a 64-bit hash of every native id yielded, not the id: a
	// corpus of millions of documents then costs a few bytes each. Two
	// distinct ids colliding (about one chance in 10⁹ at 10⁵ documents)
	// would report the second as a duplicate, never drop it.
	seed maphash.Seed
	seen map[uint64]struct{}
}

func (w *walk) input(in string) error {
	if in == Stdin {
		if w.cfg.JSONL {
			return w.jsonl(w.cfg.StdinName, w.cfg.Stdin)
		}
		meta := map[string]any{"path": Stdin, "format": string(FormatText)}
		return w.emit(w.stream(w.cfg.StdinName, meta, FormatText, w.cfg.Stdin, -1))
	}
	info, err := os.Stat(in)
	if err != nil {
		return fmt.Errorf("corpus: input %q: %w", in, err)
	}
	if info.IsDir() {
		return w.dir(in)
	}
	format, ok := w.cfg.Formats[strings.ToLower(filepath.Ext(in))]
	switch {
	case w.cfg.JSONL:
		format = FormatJSONL
	case !ok:
		format = FormatText
	}
	return w.file(in, filepath.Base(in), format)
}

func (w *walk) taken(id string) bool {
	_, ok := w.seen[maphash.String(w.seed, id)]
	return ok
}

// emit yields doc, first renaming it if its native id was already yielded:
// letting it through would make the caller overwrite the earlier document
// with an unrelated one.
func (w *walk) emit(doc Document) error {
	if err := w.ctx.Err(); err != nil {
		return err
	}
	if w.taken(doc.NativeID) {
		first := doc.NativeID
		for k := 2; w.taken(doc.NativeID); k++ {
			doc.NativeID = fmt.Sprintf("%s#dup%d", first, k)
		}
		doc.Text, doc.Status = "", StatusInvalid
		doc.Err = fmt.Errorf("%w: %q was already read from an earlier input", ErrDuplicateID, first)
	}
	w.seen[maphash.String(w.seed, doc.NativeID)] = struct{}{}
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
