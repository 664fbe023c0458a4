package corpus

import (
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/sluicehq/sluice/internal/content/extract"
)

// PageSpan is where one page of a PDF, or one slide of a PPTX or ODP, lies
// in a Document's Text.
type PageSpan struct {
	// Page is the 1-based page or slide number.
	Page int
	// Start and End are the byte offsets of the page's text in Text.
	Start, End int
	// OCR is true for a scanned page, whose text Tesseract recognised
	// with Confidence (0 to 1, word-weighted).
	OCR        bool
	Confidence float64
}

// markOCR marks the spans of the pages OCR read with their confidence.
func markOCR(pages []PageSpan, ocr []extract.PageOCR) {
	conf := make(map[int]float64, len(ocr))
	for _, p := range ocr {
		conf[p.Page] = p.Confidence
	}
	for i := range pages {
		if c, ok := conf[pages[i].Page]; ok {
			pages[i].OCR, pages[i].Confidence = true, c
		}
	}
}

// ocrOf returns the OCR confidence of each scanned page the bytes
// Text[start:end] overlap, by page number; nil when none is scanned.
func (d Document) ocrOf(start, end int) map[string]float64 {
	var m map[string]float64
	i := sort.Search(len(d.Pages), func(i int) bool { return d.Pages[i].End > start })
	for ; i < len(d.Pages) && d.Pages[i].Start < end; i++ {
		if p := d.Pages[i]; p.OCR {
			if m == nil {
				m = map[string]float64{}
			}
			m[strconv.Itoa(p.Page)] = roundConfidence(p.Confidence)
		}
	}
	return m
}

// roundConfidence keeps a confidence to three decimals: enough to read,
// and stable in the chunk's canonical metadata.
func roundConfidence(c float64) float64 { return math.Round(c*1000) / 1000 }

// joinSections joins the sections' text with blank lines, as
// extract.Document.Text does, each section normalised, and returns where
// each located page lies in the result, in order.
func joinSections(sections []extract.Section) (string, []PageSpan) {
	var b strings.Builder
	var pages []PageSpan
	for _, s := range sections {
		text := Normalize(s.Text)
		if text == "" {
			continue
		}
		if b.Len() > 0 {
			b.WriteString("\n\n")
		}
		start := b.Len()
		b.WriteString(text)
		if s.Location.Page > 0 {
			pages = append(pages, PageSpan{Page: s.Location.Page, Start: start, End: b.Len()})
		}
	}
	return b.String(), pages
}

// PagesOf returns the lowest and highest page or slide whose text the
// bytes Text[start:end] overlap: the same for a chunk within one page, 0
// and 0 for a document without pages or bytes between them.
func (d Document) PagesOf(start, end int) (first, last int) {
	// Pages are in order and do not overlap: the first that ends after
	// start is the first candidate, and overlapping ones follow it.
	i := sort.Search(len(d.Pages), func(i int) bool { return d.Pages[i].End > start })
	for ; i < len(d.Pages) && d.Pages[i].Start < end; i++ {
		p := d.Pages[i].Page
		if first == 0 || p < first {
			first = p
		}
		last = max(last, p)
	}
	return first, last
}
