package extract

import (
	"encoding/xml"
	"strconv"
	"strings"
)

// markup says how a word-processing XML vocabulary carries text, by the
// elements' local names (DOCX's w:, DrawingML's a:, ODF's text:).
type markup struct {
	// textIn are the elements whose character data is text; outside them
	// character data is layout whitespace.
	textIn map[string]bool
	// paragraphs are the elements whose end ends a paragraph.
	paragraphs map[string]bool
	// tabs and breaks stand for a tab and a line break.
	tabs, breaks map[string]bool
	// spaces stands for c="n" spaces (ODF's text:s).
	spaces string
	// skip are elements whose whole content is left out (comments,
	// speaker notes, fallback copies).
	skip map[string]bool
}

func set(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

var (
	wordprocessingML = markup{
		textIn:     set("t"),
		paragraphs: set("p"),
		tabs:       set("tab", "ptab"),
		breaks:     set("br", "cr"),
		skip:       set("Fallback", "instrText", "delText", "del"),
	}
	drawingML = markup{
		textIn:     set("t"),
		paragraphs: set("p"),
		breaks:     set("br"),
		skip:       set("Fallback"),
	}
	openDocumentText = markup{
		textIn:     set("p", "h"),
		paragraphs: set("p", "h"),
		tabs:       set("tab"),
		breaks:     set("line-break"),
		spaces:     "s",
		skip:       set("annotation", "notes", "tracked-changes"),
	}
)

// markupWalker feeds one vocabulary's tokens into a flow.
type markupWalker struct {
	m         markup
	f         *flow
	textDepth int
	skipDepth int
}

func (w *markupWalker) token(tok xml.Token) error {
	switch t := tok.(type) {
	case xml.StartElement:
		name := t.Name.Local
		if w.skipDepth > 0 || w.m.skip[name] {
			w.skipDepth++
			return nil
		}
		if w.m.textIn[name] {
			w.textDepth++
		}
		switch {
		case w.m.tabs[name]:
			return w.f.write("\t")
		case w.m.breaks[name]:
			return w.f.write("\n")
		case name == w.m.spaces && w.m.spaces != "":
			n, err := strconv.Atoi(attr(t, "c"))
			if err != nil || n < 1 {
				n = 1
			}
			return w.f.write(strings.Repeat(" ", min(n, 1000)))
		}
	case xml.EndElement:
		if w.skipDepth > 0 {
			w.skipDepth--
			return nil
		}
		name := t.Name.Local
		if w.m.textIn[name] {
			w.textDepth--
		}
		if w.m.paragraphs[name] {
			w.f.endParagraph()
		}
	case xml.CharData:
		if w.skipDepth == 0 && w.textDepth > 0 {
			return w.f.write(string(t))
		}
	}
	return nil
}
