package corpus

import (
	"errors"
	"fmt"
	"io"
	"os"
)

// file yields the document, or for JSONL the documents, of one file.
// Problems with the file itself become an invalid document: an unreadable
// file among thousands is the file's problem, not the run's.
func (w *walk) file(path, id string, format Format) error {
	f, err := os.Open(path)
	if err != nil {
		return w.emit(unreadable(id, format, err))
	}
	defer f.Close()
	if format == FormatJSONL {
		return w.jsonl(id, f)
	}
	meta := map[string]any{"path": id, "format": string(format)}
	size := int64(-1)
	if info, err := f.Stat(); err == nil && info.Mode().IsRegular() {
		size = info.Size()
	}
	return w.emit(w.stream(id, meta, format, f, size))
}

func unreadable(id string, format Format, err error) Document {
	return Document{
		NativeID: id,
		Metadata: map[string]any{"path": id, "format": string(format)},
		Status:   StatusInvalid,
		Err:      fmt.Errorf("read %s: %w", id, err),
	}
}

// stream reads one whole document from r, whose size is known when size is
// not negative, and decodes it.
func (w *walk) stream(id string, meta map[string]any, format Format, r io.Reader, size int64) Document {
	doc := Document{NativeID: id, Metadata: meta, Size: max(size, 0)}
	limit := w.cfg.MaxDocumentBytes
	raw, err := readLimited(r, size, limit)
	if err != nil {
		doc.Status, doc.Err = StatusInvalid, fmt.Errorf("read %s: %w", id, err)
		var tooLarge *TooLargeError
		if errors.As(err, &tooLarge) {
			doc.Err = err
		}
		if size >= 0 {
			meta["bytes"] = size
		}
		return doc
	}
	doc.Size = int64(len(raw))
	meta["bytes"] = doc.Size
	text, codec, err := Decode(raw)
	if err != nil {
		doc.Status, doc.Err = StatusUndecodable, err
		return doc
	}
	doc.Codec = codec
	meta["codec"] = codec
	if format == FormatHTML {
		var title string
		text, title = ReduceHTML(text)
		if title != "" {
			meta["title"] = title
		}
	}
	return finish(doc, text)
}

// readLimited reads r to its end unless it holds more than limit bytes, in
// which case it returns a *TooLargeError without reading further than it
// must. A known size sizes the buffer once and refuses early.
func readLimited(r io.Reader, size, limit int64) ([]byte, error) {
	if size > limit {
		return nil, &TooLargeError{Size: size, Limit: limit, Setting: SettingMaxDocumentBytes}
	}
	initial := int64(512)
	if size >= 0 {
		// One byte more than expected, to see EOF without growing.
		initial = size + 1
	}
	buf := make([]byte, 0, initial)
	lr := io.LimitReader(r, limit+1)
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := lr.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	if int64(len(buf)) > limit {
		// A stream, or a file that grew since it was sized: its real size
		// is unknown.
		return nil, &TooLargeError{Limit: limit, Setting: SettingMaxDocumentBytes}
	}
	return buf, nil
}
