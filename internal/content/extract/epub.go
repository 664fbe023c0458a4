package extract

import (
	"encoding/xml"

	"github.com/sluicehq/sluice/pkg/classify"
)

// extractEPUB reads the book's XHTML documents in spine order, each
// reduced to text as its own section.
func extractEPUB(a *archive, lim Limits) (*Document, error) {
	opf := ""
	err := a.xml("META-INF/container.xml", func(tok xml.Token) error {
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "rootfile" && opf == "" {
			opf = attr(se, "full-path")
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if opf == "" {
		return nil, failf(classify.ClassCorrupt, "META-INF/container.xml names no package document")
	}
	hrefs := map[string]string{}
	var spine []string
	err = a.xml(opf, func(tok xml.Token) error {
		if se, ok := tok.(xml.StartElement); ok {
			switch se.Name.Local {
			case "item":
				hrefs[attr(se, "id")] = resolve(opf, attr(se, "href"))
			case "itemref":
				if attr(se, "linear") != "no" {
					spine = append(spine, attr(se, "idref"))
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	f := newFlow(lim)
	for _, id := range spine {
		entry, ok := hrefs[id]
		if !ok || !a.has(entry) {
			return nil, failf(classify.ClassCorrupt, "spine item %q is not in the book", id)
		}
		rc, err := a.open(entry)
		if err != nil {
			return nil, err
		}
		_, err = reduceHTML(rc, f)
		_ = rc.Close()
		if err != nil {
			return nil, err
		}
		f.endSection(Location{})
	}
	return &Document{Format: FormatEPUB, Title: a.elementText(opf, "title"), Sections: f.sections}, nil
}
