package extract

import "encoding/xml"

// extractODF reads an ODT as one flowing section, or an ODP slide by
// slide (draw:page), numbered from 1, speaker notes left out.
func extractODF(a *archive, format Format, lim Limits) (*Document, error) {
	f := newFlow(lim)
	w := &markupWalker{m: openDocumentText, f: f}
	page := 0
	err := a.xml("content.xml", func(tok xml.Token) error {
		if format == FormatODP && w.skipDepth == 0 {
			switch t := tok.(type) {
			case xml.StartElement:
				if t.Name.Local == "page" {
					page++
				}
			case xml.EndElement:
				if t.Name.Local == "page" {
					f.endSection(Location{Page: page})
				}
			}
		}
		return w.token(tok)
	})
	if err != nil {
		return nil, atPage(err, page)
	}
	f.endSection(Location{})
	return &Document{Format: format, Title: a.elementText("meta.xml", "title"), Sections: f.sections}, nil
}
