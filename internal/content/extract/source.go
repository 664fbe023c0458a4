package extract

import (
	"bytes"
	"fmt"
	"io"
	"os"

	"github.com/sluicehq/sluice/pkg/classify"
)

// Source is the file to extract from: a path on disk or bytes in memory.
type Source struct {
	// Name is the file's name, used to detect the content of a gzip
	// stream ("notes.md.gz" holds Markdown) and in messages.
	Name string
	// Path is the file on disk. It is read when Data is nil.
	Path string
	// Data is the file's content when it is not on disk (stdin, a stream's
	// content, a test).
	Data []byte
	// Password opens an encrypted PDF (as user or owner password); empty
	// for none. A replay of an encrypted document sets it.
	Password string
}

// file is an opened Source.
type file struct {
	io.ReaderAt
	size  int64
	close func() error
}

// open opens src for random access and checks its size against maxBytes.
func (src Source) open(maxBytes int64) (*file, error) {
	if src.Data != nil || src.Path == "" {
		if int64(len(src.Data)) > maxBytes {
			return nil, failf(classify.ClassTooLarge, "%d bytes, over the %d-byte limit", len(src.Data), maxBytes)
		}
		return &file{ReaderAt: bytes.NewReader(src.Data), size: int64(len(src.Data)), close: func() error { return nil }}, nil
	}
	f, err := os.Open(src.Path)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", src.Path, err)
	}
	st, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("stat %s: %w", src.Path, err)
	}
	if st.Size() > maxBytes {
		_ = f.Close()
		return nil, failf(classify.ClassTooLarge, "%d bytes, over the %d-byte limit", st.Size(), maxBytes)
	}
	return &file{ReaderAt: f, size: st.Size(), close: f.Close}, nil
}

// readAll returns the whole of f.
func (f *file) readAll() ([]byte, error) {
	buf := make([]byte, f.size)
	if _, err := f.ReadAt(buf, 0); err != nil && err != io.EOF {
		return nil, err
	}
	return buf, nil
}

// onDisk returns a path to src's content, writing Data to a temporary file
// for the tools that need a file; the returned func removes it.
func (src Source) onDisk() (string, func(), error) {
	if src.Data == nil && src.Path != "" {
		return src.Path, func() {}, nil
	}
	f, err := os.CreateTemp("", "sluice-extract-*")
	if err != nil {
		return "", nil, fmt.Errorf("temporary copy: %w", err)
	}
	remove := func() { _ = os.Remove(f.Name()) }
	if _, err := f.Write(src.Data); err != nil {
		_ = f.Close()
		remove()
		return "", nil, fmt.Errorf("temporary copy: %w", err)
	}
	if err := f.Close(); err != nil {
		remove()
		return "", nil, fmt.Errorf("temporary copy: %w", err)
	}
	return f.Name(), remove, nil
}
