package extract

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"strings"

	"github.com/sluicehq/sluice/pkg/classify"
)

// extractGzip inflates a gzip stream within MaxUncompressed, detects its
// content by its bytes and the name without ".gz", and extracts that.
func extractGzip(ctx context.Context, src Source, lim Limits, o OCR) (*Document, error) {
	f, err := src.open(lim.MaxBytes)
	if err != nil {
		return nil, err
	}
	defer f.close()
	zr, err := gzip.NewReader(io.NewSectionReader(f, 0, f.size))
	if err != nil {
		return nil, wrapf(classify.ClassCorrupt, err, "not a readable gzip stream")
	}
	inflate := newBudget(lim.MaxUncompressed, "inflated")
	inner, err := io.ReadAll(inflate.reader(zr))
	if err != nil {
		if e, ok := errors.AsType[*Error](err); ok {
			return nil, e
		}
		return nil, wrapf(classify.ClassCorrupt, err, "inflate gzip stream")
	}
	name := innerName(src.Name, zr.Name)
	d := Detect(name, inner)
	if d.Unsupported() {
		return nil, failf(classify.ClassUnsupportedFormat, "the gzip stream holds %s content (%s)", d.Format, d.MIME)
	}
	return extract(ctx, Source{Name: name, Data: bytes.Clone(inner), Password: src.Password}, d.Format, lim, o, false)
}

// innerName is the name of a gzip stream's content: the name the stream
// records, else the file's name without ".gz" (".tgz" is a ".tar").
func innerName(outer, recorded string) string {
	if recorded != "" {
		return recorded
	}
	lower := strings.ToLower(outer)
	switch {
	case strings.HasSuffix(lower, ".gz"):
		return outer[:len(outer)-3]
	case strings.HasSuffix(lower, ".tgz"):
		return outer[:len(outer)-4] + ".tar"
	}
	return outer
}
