package extract

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"encoding/xml"
	"errors"
	"io"
	"path"
	"strings"

	"github.com/sluicehq/sluice/pkg/classify"
)

// archive is a zip-based document opened within the limits: its entry
// count checked before the central directory is read, and every entry
// inflated against one budget.
type archive struct {
	zr      *zip.Reader
	entries map[string]*zip.File
	inflate *budget
}

// End of central directory records (APPNOTE.TXT 4.3.14-16).
var (
	sigEOCD         = []byte("PK\x05\x06")
	sigZip64Locator = []byte("PK\x06\x07")
	sigZip64EOCD    = []byte("PK\x06\x06")
)

// maxEOCDSearch is how far from the end the EOCD record may start: its
// 22 bytes and a comment of at most 65535.
const maxEOCDSearch = 22 + 65535

func openArchive(f *file, lim Limits) (*archive, error) {
	n, err := zipEntryCount(f)
	if err != nil {
		return nil, err
	}
	if n > uint64(lim.MaxEntries) {
		return nil, failf(classify.ClassTooLarge, "%d zip entries, over the limit of %d", n, lim.MaxEntries)
	}
	zr, err := zip.NewReader(f, f.size)
	if err != nil && !errors.Is(err, zip.ErrInsecurePath) {
		return nil, wrapf(classify.ClassCorrupt, err, "not a readable zip")
	}
	a := &archive{zr: zr, entries: make(map[string]*zip.File, len(zr.File)), inflate: newBudget(lim.MaxUncompressed, "inflated")}
	for _, e := range zr.File {
		a.entries[e.Name] = e
	}
	return a, nil
}

// zipEntryCount reads the entry count from the end of central directory
// record, so that a directory of millions of entries is refused before it
// is loaded.
func zipEntryCount(f *file) (uint64, error) {
	tail := make([]byte, min(f.size, maxEOCDSearch))
	if _, err := f.ReadAt(tail, f.size-int64(len(tail))); err != nil && err != io.EOF {
		return 0, wrapf(classify.ClassCorrupt, err, "read zip directory")
	}
	at := bytes.LastIndex(tail, sigEOCD)
	if at < 0 || len(tail)-at < 22 {
		return 0, failf(classify.ClassCorrupt, "no zip end of central directory record: truncated")
	}
	n := uint64(binary.LittleEndian.Uint16(tail[at+10:]))
	if n != 0xFFFF || at < 20 || !bytes.Equal(tail[at-20:at-16], sigZip64Locator) {
		return n, nil
	}
	off := int64(binary.LittleEndian.Uint64(tail[at-20+8:]))
	rec := make([]byte, 40)
	if _, err := f.ReadAt(rec, off); err != nil || !bytes.HasPrefix(rec, sigZip64EOCD) {
		return 0, failf(classify.ClassCorrupt, "bad zip64 end of central directory record")
	}
	return binary.LittleEndian.Uint64(rec[32:]), nil
}

// has reports whether the archive holds the named entry.
func (a *archive) has(name string) bool { return a.entries[name] != nil }

// open returns the named entry's content, inflated against the budget.
func (a *archive) open(name string) (io.ReadCloser, error) {
	e := a.entries[name]
	if e == nil {
		return nil, failf(classify.ClassCorrupt, "no entry %q", name)
	}
	if e.UncompressedSize64 > uint64(max(a.inflate.left, 0)) {
		return nil, failf(classify.ClassExtractMemory, "entry %q claims %d bytes, past the %d-byte inflate limit", name, e.UncompressedSize64, a.inflate.limit)
	}
	rc, err := e.Open()
	if err != nil {
		return nil, wrapf(classify.ClassCorrupt, err, "entry %q", name)
	}
	return struct {
		io.Reader
		io.Closer
	}{a.inflate.reader(rc), rc}, nil
}

// xml decodes the named entry as XML, calling fn for every token.
func (a *archive) xml(name string, fn func(xml.Token) error) error {
	rc, err := a.open(name)
	if err != nil {
		return err
	}
	defer rc.Close()
	return decodeXML(name, rc, fn)
}

// decodeXML streams the tokens of r to fn. encoding/xml never expands an
// entity a document declares, so entity expansion (billion laughs) is not
// possible: an undeclared entity is a syntax error, reported as corrupt.
func decodeXML(name string, r io.Reader, fn func(xml.Token) error) error {
	d := xml.NewDecoder(r)
	for {
		tok, err := d.RawToken()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			var ex *Error
			if errors.As(err, &ex) {
				return ex
			}
			return wrapf(classify.ClassCorrupt, err, "entry %q", name)
		}
		if err := fn(tok); err != nil {
			return err
		}
	}
}

// resolve returns the entry a relationship target names, relative to the
// part that holds the relationship.
func resolve(part, target string) string {
	if strings.HasPrefix(target, "/") {
		return strings.TrimPrefix(target, "/")
	}
	return path.Join(path.Dir(part), target)
}

// attr returns the value of the attribute with the given local name.
func attr(se xml.StartElement, local string) string {
	for _, a := range se.Attr {
		if a.Name.Local == local {
			return a.Value
		}
	}
	return ""
}
