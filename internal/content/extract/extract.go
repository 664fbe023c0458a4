package extract

import (
	"context"
	"errors"
	"fmt"

	"github.com/sluicehq/sluice/pkg/classify"
)

// Extract returns the text of src, which Detect found to be format.
//
// PDF is read page by page through poppler's tools, its scanned pages and
// PNG, JPEG and TIFF images by OCR with default settings (see
// ExtractWith); DOCX, PPTX, XLSX, ODT,
// ODP, ODS and EPUB through archive/zip and streamed XML; a gzip stream is
// inflated and its content detected and extracted in turn (one level
// deep); text, Markdown, JSON, JSONL, XML, CSV and TSV are decoded and
// returned whole; HTML is reduced to its readable text. Record files are
// read record by record with ExtractRecords instead.
//
// Every extraction runs within lim (zero fields take the defaults): past
// Timeout it fails with extract_timeout, past MaxUncompressed with
// extract_memory, past MaxBytes, MaxPages or MaxEntries with too_large.
// A failure of the file is an *Error whose Class says which
// (encrypted, corrupt, no_text_layer, unsupported_format, ...); a PDF tool
// that is not installed is ErrToolMissing; a cancelled ctx returns its
// error.
func Extract(ctx context.Context, src Source, format Format, lim Limits) (*Document, error) {
	return ExtractWith(ctx, src, format, Config{Limits: lim})
}

// Config is how files are extracted: the limits of one extraction, and
// how scans are read.
type Config struct {
	// Limits bound what one file may cost; a zero field takes its default.
	Limits Limits
	// OCR is how scanned PDF pages and images are read; a zero field
	// takes its default.
	OCR OCR
}

// Validate reports a setting that has no meaning, saying how to fix it.
func (c Config) Validate() error { return errors.Join(c.Limits.Validate(), c.OCR.Validate()) }

// ExtractWith is Extract with cfg's OCR settings: PDF pages without a
// usable text layer, and PNG, JPEG and TIFF images, are read by
// Tesseract, each page's confidence kept in Document.OCR. A scan below
// cfg.OCR's bar fails with ocr_low_confidence, its low pages and their
// scores in the *Error, unless cfg.OCR.Accept; an image over
// Limits.MaxPixels is too_large before any tool decodes it.
func ExtractWith(ctx context.Context, src Source, format Format, cfg Config) (*Document, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	lim, o := cfg.Limits.withDefaults(), cfg.OCR.withDefaults()
	ctx, cancel := context.WithTimeoutCause(ctx, lim.Timeout, errTimedOut)
	defer cancel()
	doc, err := extract(ctx, src, format, lim, o, true)
	if err != nil {
		if ctx.Err() != nil && context.Cause(ctx) == errTimedOut {
			return nil, wrapf(classify.ClassExtractTimeout, errTimedOut, "after %v", lim.Timeout)
		}
		return nil, err
	}
	return doc, nil
}

func extract(ctx context.Context, src Source, format Format, lim Limits, o OCR, outer bool) (*Document, error) {
	switch format {
	case FormatPDF:
		return extractPDF(ctx, src, lim, o)
	case FormatPNG, FormatJPEG, FormatTIFF:
		return extractImage(ctx, src, format, lim, o)
	case FormatGzip:
		if !outer {
			return nil, failf(classify.ClassUnsupportedFormat, "gzip inside gzip")
		}
		return extractGzip(ctx, src, lim, o)
	case FormatDOCX, FormatPPTX, FormatXLSX, FormatODT, FormatODP, FormatODS, FormatEPUB:
		return extractZipped(ctx, src, format, lim)
	case FormatText, FormatMarkdown, FormatJSON, FormatJSONL, FormatXML, FormatCSV, FormatTSV, FormatHTML:
		return extractText(src, format, lim)
	}
	return nil, failf(classify.ClassUnsupportedFormat, "%s content (%s) has no text to extract", format, format.MIME())
}

// extractZipped opens a zip-based format within the limits.
func extractZipped(ctx context.Context, src Source, format Format, lim Limits) (*Document, error) {
	f, err := src.open(lim.MaxBytes)
	if err != nil {
		return nil, err
	}
	defer f.close()
	a, err := openArchive(f, lim)
	if err != nil {
		return nil, err
	}
	// The XML walks check no context; a zip-based file is bounded by its
	// budgets, so the timeout is only checked between the walk's stages.
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	switch format {
	case FormatDOCX:
		return extractDOCX(a, lim)
	case FormatPPTX:
		return extractPPTX(a, lim)
	case FormatXLSX, FormatODS:
		return extractSheets(a, format, lim)
	case FormatODT, FormatODP:
		return extractODF(a, format, lim)
	}
	return extractEPUB(a, lim)
}

// extractText decodes a text format whole; HTML is reduced to its text.
func extractText(src Source, format Format, lim Limits) (*Document, error) {
	raw, err := src.readAll(lim.MaxBytes)
	if err != nil {
		return nil, err
	}
	text, err := decodeText(raw)
	if err != nil {
		return nil, &Error{Class: classify.ClassUnsupportedFormat, Detail: "the content is not text", Err: err}
	}
	if format == FormatHTML {
		f := newFlow(lim)
		title, err := reduceHTMLString(text, f)
		if err != nil {
			return nil, err
		}
		f.endSection(Location{})
		return &Document{Format: format, Title: title, Sections: f.sections}, nil
	}
	doc := &Document{Format: format}
	if text != "" {
		doc.Sections = []Section{{Text: text}}
	}
	return doc, nil
}

// readAll returns the whole of src within maxBytes.
func (src Source) readAll(maxBytes int64) ([]byte, error) {
	f, err := src.open(maxBytes)
	if err != nil {
		return nil, err
	}
	defer f.close()
	raw, err := f.readAll()
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", src.Name, err)
	}
	return raw, nil
}
