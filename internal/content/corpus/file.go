package corpus

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/sluicehq/sluice/internal/content/extract"
	"github.com/sluicehq/sluice/pkg/classify"
)

// file yields the document, or for JSONL the documents, of the file at
// path, which the user knows as shown and whose native id is id. Its
// format is decided by its content (extract.Detect), its name deciding
// only among text formats: text-like files are read as text, document
// formats go to the Extractor, and anything else is yielded as
// StatusUnsupported. named is true for a file named in Inputs.
//
// Problems with the file itself become an invalid document: an
// unreadable file among thousands is the file's problem, not the run's.
func (w *walk) file(path, shown, id string, named bool) error {
	f, err := os.Open(path)
	if err != nil {
		if err := w.onFile(FileEvent{Path: shown}); err != nil {
			return err
		}
		return w.emit(unreadable(id, shown, err))
	}
	owned := true // false once a worker extracting the file closes it
	defer func() {
		if owned {
			f.Close()
		}
	}()
	size := int64(-1)
	if info, err := f.Stat(); err == nil && info.Mode().IsRegular() {
		size = info.Size()
	}
	if w.cfg.MaxFileBytes > 0 && size > w.cfg.MaxFileBytes {
		return w.onFile(FileEvent{Path: shown, Excluded: ExcludedSize})
	}
	head, err := readHead(f)
	if err != nil {
		if err := w.onFile(FileEvent{Path: shown}); err != nil {
			return err
		}
		return w.emit(unreadable(id, shown, err))
	}
	det := extract.Detect(filepath.Base(shown), head)
	if len(w.cfg.Formats) > 0 && !slices.Contains(w.cfg.Formats, string(det.Format)) {
		return w.onFile(FileEvent{Path: shown, Excluded: ExcludedFormat})
	}
	rest := io.MultiReader(bytes.NewReader(head), f)
	if w.cfg.Records != nil && readsRecords(det.Format) || (named && w.cfg.JSONL || isJSONLName(shown)) && (textual(det) || det.Format == extract.FormatBinary) {
		return w.recordFile(path, shown, id, det, rest)
	}
	meta := map[string]any{"path": id, "format": string(det.Format)}
	doc := Document{NativeID: id, File: shown, Detected: det, Metadata: meta, Size: max(size, 0), Status: StatusUnsupported}
	if !textual(det) && size >= 0 {
		meta["bytes"] = size
	}
	if !textual(det) && det.Extractable() && w.cfg.Extractor != nil {
		owned = false
		return w.extractAhead(FileEvent{Path: shown}, doc, path, f, rest)
	}
	if err := w.onFile(FileEvent{Path: shown}); err != nil {
		return err
	}
	if textual(det) {
		doc := w.stream(id, shown, meta, &det, rest, size)
		if errors.Is(doc.Err, ErrTooLarge) {
			// Refused on its size before anything past the head was read.
			doc.SHA256 = hashAll(rest)
		}
		return w.emit(doc)
	}
	doc.Err = &UnsupportedError{Detected: det, NoExtractor: det.Extractable()}
	doc.SHA256 = hashAll(rest)
	return w.emit(doc)
}

// recordFile yields the records of a file read record by record: under
// the source's record schema, or as JSONL, whose lines are checked one
// by one (a line that is not text is parked alone).
func (w *walk) recordFile(path, shown, id string, det extract.Detection, rest io.Reader) error {
	if err := w.onFile(FileEvent{Path: shown, Records: true}); err != nil {
		return err
	}
	if w.cfg.Records != nil && readsRecords(det.Format) {
		return w.records(path, shown, id, det)
	}
	return w.jsonl(id, rest)
}

// readHead reads the first extract.HeadSize bytes of r, or all of a
// shorter r, for Detect.
func readHead(r io.Reader) ([]byte, error) {
	head := make([]byte, extract.HeadSize)
	n, err := io.ReadFull(r, head)
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
		return nil, err
	}
	return head[:n], nil
}

// extract reads the document doc of the file at path with the
// Extractor. A failure is the document's, and only a cancelled walk is
// the walk's: a missing extraction tool parks the files that need it as
// extract_tool_missing, their bytes kept for a replay once it is
// installed, while the files that do not need it are read.
func (w *walk) extract(doc Document, path string) (Document, error) {
	x, err := w.cfg.Extractor.Extract(w.ctx, path, doc.Detected)
	if cerr := w.ctx.Err(); cerr != nil {
		return doc, cerr
	}
	switch {
	case errors.Is(err, extract.ErrToolMissing):
		doc.Status, doc.Err = StatusInvalid, fmt.Errorf("extract %s from %s: %w", doc.Detected.Format, doc.NativeID, classify.Extraction(classify.ClassToolMissing, err))
		return doc, nil
	case err != nil:
		doc.Status, doc.Err = StatusInvalid, fmt.Errorf("extract %s from %s: %w", doc.Detected.Format, doc.NativeID, err)
		if e, ok := errors.AsType[*extract.Error](err); ok {
			doc.OCR = e.Scanned
			doc.Recognised, _ = joinSections(e.Recognised)
		}
		return doc, nil
	}
	if x.Title != "" {
		doc.Metadata["title"] = x.Title
	}
	if len(x.OCR) > 0 {
		doc.OCR = x.OCR
		doc.Metadata["ocr_pages"] = len(x.OCR)
		doc.Metadata["ocr_document_confidence"] = roundConfidence(extract.DocumentConfidence(x.OCR))
	}
	if x.OCRAccepted {
		doc.Metadata["ocr_accepted"] = true
	}
	text, pages := joinSections(x.Sections)
	if doc = finish(doc, text); doc.Status == StatusOK {
		markOCR(pages, x.OCR)
		doc.Pages = pages
	}
	return doc, nil
}

// textual reports whether a file is read as text: a text format, or
// content that looks like text with a byte no encoding allows, which
// decoding then reports as undecodable text (invalid_encoding) rather
// than as a format.
func textual(d extract.Detection) bool {
	return d.TextLike() || d.Format == extract.FormatBinary && strings.HasPrefix(d.MIME, "text/")
}

// isJSONLName reports whether a file found in a walk is read as JSONL
// records: by its name, so that a JSON file is never split into records
// by surprise.
func isJSONLName(name string) bool {
	switch strings.ToLower(filepath.Ext(name)) {
	case ".jsonl", ".ndjson":
		return true
	}
	return false
}

// hashAll returns the hex SHA-256 of what r holds, or "" when it cannot
// be read to its end.
func hashAll(r io.Reader) string {
	h := sha256.New()
	if _, err := io.Copy(h, r); err != nil {
		return ""
	}
	return hex.EncodeToString(h.Sum(nil))
}

func unreadable(id, shown string, err error) Document {
	return Document{
		NativeID: id,
		File:     shown,
		Metadata: map[string]any{"path": id},
		Status:   StatusInvalid,
		Err:      fmt.Errorf("read %s: %w", id, err),
	}
}

// stream reads one whole document from r, whose size is known when size is
// not negative, and decodes it. det is its detected format, or nil for
// stdin, whose format is detected from what was read.
func (w *walk) stream(id, shown string, meta map[string]any, det *extract.Detection, r io.Reader, size int64) Document {
	doc := Document{NativeID: id, File: shown, Metadata: meta, Size: max(size, 0)}
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
		if det != nil {
			doc.Detected = *det
		}
		return doc
	}
	sum := sha256.Sum256(raw)
	doc.SHA256 = hex.EncodeToString(sum[:])
	doc.Size = int64(len(raw))
	meta["bytes"] = doc.Size
	if det == nil {
		d := extract.Detect(id, raw)
		det = &d
		meta["format"] = string(d.Format)
	}
	doc.Detected = *det
	if !textual(*det) {
		doc.Status, doc.Err = StatusUnsupported, &UnsupportedError{Detected: *det, NoExtractor: det.Extractable() && w.cfg.Extractor == nil}
		return doc
	}
	text, codec, err := Decode(raw)
	if err != nil {
		doc.Status, doc.Err = StatusUndecodable, err
		return doc
	}
	doc.Codec = codec
	meta["codec"] = codec
	if det.Format == extract.FormatHTML {
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
