package corpus

import (
	"sort"
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
}

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
