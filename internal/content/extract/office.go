package extract

import (
	"encoding/xml"
	"strings"
)

// extractDOCX reads word/document.xml's paragraphs, headings and table
// cells in order, as one flowing section.
func extractDOCX(a *archive, lim Limits) (*Document, error) {
	f := newFlow(lim)
	w := &markupWalker{m: wordprocessingML, f: f}
	if err := a.xml("word/document.xml", w.token); err != nil {
		return nil, err
	}
	f.endSection(Location{})
	return &Document{Format: FormatDOCX, Title: a.elementText("docProps/core.xml", "title"), Sections: f.sections}, nil
}

// extractPPTX reads each slide in presentation order as its own section,
// numbered from 1.
func extractPPTX(a *archive, lim Limits) (*Document, error) {
	slides, err := a.slideOrder()
	if err != nil {
		return nil, err
	}
	f := newFlow(lim)
	for i, slide := range slides {
		w := &markupWalker{m: drawingML, f: f}
		if err := a.xml(slide, w.token); err != nil {
			return nil, atPage(err, i+1)
		}
		f.endSection(Location{Page: i + 1})
	}
	return &Document{Format: FormatPPTX, Title: a.elementText("docProps/core.xml", "title"), Sections: f.sections}, nil
}

const presentation = "ppt/presentation.xml"

// slideOrder lists the slide parts in the order of presentation.xml's
// sldIdLst, resolved through its relationships.
func (a *archive) slideOrder() ([]string, error) {
	var ids []string
	err := a.xml(presentation, func(tok xml.Token) error {
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "sldId" {
			ids = append(ids, relID(se))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	targets, err := a.relationships(presentation)
	if err != nil {
		return nil, err
	}
	slides := make([]string, 0, len(ids))
	for _, id := range ids {
		if t, ok := targets[id]; ok {
			slides = append(slides, t)
		}
	}
	return slides, nil
}

// relationships maps a part's relationship ids to the entries they target.
func (a *archive) relationships(part string) (map[string]string, error) {
	dir, base := splitPart(part)
	rels := dir + "_rels/" + base + ".rels"
	targets := map[string]string{}
	err := a.xml(rels, func(tok xml.Token) error {
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "Relationship" && attr(se, "TargetMode") != "External" {
			targets[attr(se, "Id")] = resolve(part, attr(se, "Target"))
		}
		return nil
	})
	return targets, err
}

func splitPart(part string) (dir, base string) {
	i := strings.LastIndex(part, "/")
	return part[:i+1], part[i+1:]
}

// elementText returns the text of the first element with the given local
// name in a metadata entry, or "" if the entry or element is missing or
// unreadable: metadata is a nicety, never a reason to fail.
func (a *archive) elementText(entry, local string) string {
	if !a.has(entry) {
		return ""
	}
	var b strings.Builder
	depth, done := 0, false
	_ = a.xml(entry, func(tok xml.Token) error {
		switch t := tok.(type) {
		case xml.StartElement:
			if !done && (depth > 0 || t.Name.Local == local) {
				depth++
			}
		case xml.EndElement:
			if depth > 0 {
				depth--
				done = depth == 0
			}
		case xml.CharData:
			if depth > 0 && b.Len() < 4096 {
				b.Write(t)
			}
		}
		return nil
	})
	return normalize(strings.Join(strings.Fields(b.String()), " "))
}

// relID returns an element's r:id, the prefixed attribute that names a
// relationship, as opposed to its unprefixed numeric id.
func relID(se xml.StartElement) string {
	for _, a := range se.Attr {
		if a.Name.Local == "id" && a.Name.Space != "" {
			return a.Value
		}
	}
	return ""
}
