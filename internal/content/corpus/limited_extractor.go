package corpus

import (
	"context"
	"path/filepath"

	"github.com/sluicehq/sluice/internal/content/extract"
)

// LimitedExtractor is the Extractor that reads a file with extract.Extract
// within its Limits: PDF through poppler's tools, scans and images by
// OCR under its OCR settings, the Office,
// OpenDocument and EPUB formats through archive/zip, gzip one level
// deep.
type LimitedExtractor struct {
	// Limits bound what one file may cost; a zero field takes extract's
	// default (extract.DefaultTimeout, extract.DefaultMaxBytes, ...).
	Limits extract.Limits
	// Password opens encrypted PDFs; empty for none. A replay of a file
	// parked as encrypted sets it.
	Password string
	// OCR is how scanned pages and images are read: the source's bar,
	// scope and languages; a zero field takes extract's default.
	OCR extract.OCR
}

var (
	_ Extractor       = LimitedExtractor{}
	_ RecordExtractor = LimitedExtractor{}
)

// Extract implements Extractor.
func (e LimitedExtractor) Extract(ctx context.Context, path string, d extract.Detection) (*extract.Document, error) {
	return extract.ExtractWith(ctx, extract.Source{Name: filepath.Base(path), Path: path, Password: e.Password}, d.Format,
		extract.Config{Limits: e.Limits, OCR: e.OCR})
}

// ExtractRecords implements RecordExtractor, within the same Limits.
func (e LimitedExtractor) ExtractRecords(ctx context.Context, path string, d extract.Detection, schema extract.RecordSchema, fn extract.RecordFunc) error {
	return extract.ExtractRecords(ctx, extract.Source{Name: filepath.Base(path), Path: path}, d.Format, schema, e.Limits, fn)
}

// Validate reports a limit or an OCR setting that has no meaning,
// saying how to fix it. Config.Validate calls it.
func (e LimitedExtractor) Validate() error {
	return extract.Config{Limits: e.Limits, OCR: e.OCR}.Validate()
}
