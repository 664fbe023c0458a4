package extract

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"image"
	"image/jpeg"
	"image/png"
	"io"
	"time"

	"github.com/sluicehq/sluice/pkg/classify"
)

// extractImage reads a PNG, JPEG or TIFF image by OCR, every page of a
// multi-page TIFF, once its header has shown that no page is larger than
// MaxPixels.
func extractImage(ctx context.Context, src Source, format Format, lim Limits, o OCR) (*Document, error) {
	f, err := src.open(lim.MaxBytes)
	if err != nil {
		return nil, err
	}
	sizes, err := imageSizes(f, format, lim.MaxPages)
	_ = f.close()
	if err != nil {
		return nil, err
	}
	for i, sz := range sizes {
		if err := checkPixels(sz, lim); err != nil {
			return nil, atPage(err, i+1)
		}
	}
	path, remove, err := src.onDisk()
	if err != nil {
		return nil, err
	}
	defer remove()
	t := tool{maxMemory: lim.MaxMemory, maxOutput: lim.MaxUncompressed}
	start := time.Now()
	rec, err := tesseract(ctx, t, o, path, nil, 0)
	if err != nil {
		return nil, err
	}
	// One run reads every page; each is charged an equal share of its time.
	share := time.Since(start) / time.Duration(max(len(sizes), 1))
	doc := &Document{Format: format}
	for _, page := range rec.order {
		p := *rec.pages[page]
		p.Duration = share
		doc.OCR = append(doc.OCR, p)
		doc.Sections = append(doc.Sections, Section{Text: normalize(rec.text[page]), Location: Location{Page: page}})
	}
	return finishOCR(doc, o)
}

// finishOCR fails a scan in which OCR found no text with no_text_layer,
// and one below the bar with ocr_low_confidence.
func finishOCR(doc *Document, o OCR) (*Document, error) {
	if len(doc.Sections) == 0 {
		return nil, failf(classify.ClassNoTextLayer, "OCR found no text")
	}
	if err := o.judge(doc.OCR); err != nil {
		if e, ok := errors.AsType[*Error](err); ok {
			e.Recognised = doc.Sections
		}
		return nil, err
	}
	doc.OCRAccepted = o.Accept && lowPages(doc.OCR, o.MinConfidence, o.Scope) != nil
	return doc, nil
}

// checkPixels refuses an image larger than MaxPixels before any tool
// decodes it: a bomb declares huge dimensions in a few bytes.
func checkPixels(sz image.Point, lim Limits) error {
	if sz.X <= 0 || sz.Y <= 0 {
		return failf(classify.ClassCorrupt, "the image declares %d × %d pixels", sz.X, sz.Y)
	}
	if int64(sz.X) > lim.MaxPixels/int64(sz.Y) {
		return failf(classify.ClassTooLarge, "%d × %d pixels, over the limit of %d", sz.X, sz.Y, lim.MaxPixels)
	}
	return nil
}

// imageSizes reads the width and height of every page of an image from
// its header, decoding no pixels.
func imageSizes(f *file, format Format, maxPages int) ([]image.Point, error) {
	r := io.NewSectionReader(f, 0, f.size)
	var cfg image.Config
	var err error
	switch format {
	case FormatPNG:
		cfg, err = png.DecodeConfig(r)
	case FormatJPEG:
		cfg, err = jpeg.DecodeConfig(r)
	case FormatTIFF:
		return tiffSizes(f, maxPages)
	default:
		return nil, failf(classify.ClassUnsupportedFormat, "%s is not an image", format)
	}
	if err != nil {
		return nil, wrapf(classify.ClassCorrupt, err, "the %s header cannot be read", format)
	}
	return []image.Point{{cfg.Width, cfg.Height}}, nil
}

// TIFF tags that hold an image's dimensions (TIFF 6.0, section 8).
const (
	tiffImageWidth  = 256
	tiffImageLength = 257
)

// tiffSizes walks a TIFF's chain of image file directories, one per page,
// reading each page's ImageWidth and ImageLength. A chain longer than
// maxPages is too_large; one that loops is corrupt.
func tiffSizes(f *file, maxPages int) ([]image.Point, error) {
	head := make([]byte, 8)
	if _, err := f.ReadAt(head, 0); err != nil {
		return nil, wrapf(classify.ClassCorrupt, err, "the TIFF header cannot be read")
	}
	var order binary.ByteOrder = binary.LittleEndian
	if bytes.HasPrefix(head, magicTIFFM) {
		order = binary.BigEndian
	}
	var sizes []image.Point
	seen := map[uint32]bool{}
	for off := order.Uint32(head[4:]); off != 0; {
		if seen[off] {
			return nil, failf(classify.ClassCorrupt, "the TIFF's directories loop")
		}
		seen[off] = true
		if len(sizes) >= maxPages {
			return nil, failf(classify.ClassTooLarge, "more than %d pages, over the limit", maxPages)
		}
		sz, next, err := tiffDirectory(f, order, off)
		if err != nil {
			return nil, atPage(wrapf(classify.ClassCorrupt, err, "the TIFF directory cannot be read"), len(sizes)+1)
		}
		sizes = append(sizes, sz)
		off = next
	}
	if len(sizes) == 0 {
		return nil, failf(classify.ClassCorrupt, "the TIFF has no image")
	}
	return sizes, nil
}

// tiffDirectory reads one image file directory at off: the page's
// dimensions and the offset of the next directory.
func tiffDirectory(f *file, order binary.ByteOrder, off uint32) (image.Point, uint32, error) {
	var count [2]byte
	if _, err := f.ReadAt(count[:], int64(off)); err != nil {
		return image.Point{}, 0, err
	}
	n := int(order.Uint16(count[:]))
	entries := make([]byte, n*12+4)
	if _, err := f.ReadAt(entries, int64(off)+2); err != nil {
		return image.Point{}, 0, err
	}
	var sz image.Point
	for i := range n {
		e := entries[i*12:]
		var v int
		switch order.Uint16(e[2:]) {
		case 3: // SHORT
			v = int(order.Uint16(e[8:]))
		case 4: // LONG
			v = int(order.Uint32(e[8:]))
		default:
			continue
		}
		switch order.Uint16(e) {
		case tiffImageWidth:
			sz.X = v
		case tiffImageLength:
			sz.Y = v
		}
	}
	if sz.X == 0 || sz.Y == 0 {
		return sz, 0, errors.New("no ImageWidth or ImageLength")
	}
	return sz, order.Uint32(entries[n*12:]), nil
}
