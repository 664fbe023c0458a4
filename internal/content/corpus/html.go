package corpus

import (
	"bytes"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// ReduceHTML returns the readable text of an HTML document and its <title>.
//
// Content no reader sees is dropped: script, style, noscript, template,
// iframe and svg elements, and everything in <head> but the title. Block
// elements (p, div, li, h1…h6, tr, section, blockquote, pre, …) end a
// paragraph, so the text keeps the "\n\n" boundaries the chunker prefers;
// <br> ends a line; table cells are separated by a space. Inside a block,
// runs of whitespace collapse to one space, except inside <pre>, whose
// layout is kept. Entities are decoded. The result is normalised like
// Decode's output; title is empty when the document has none.
//
// ReduceHTML never fails: the tokenizer recovers from malformed markup the
// way browsers do, and whatever text it finds is returned.
func ReduceHTML(src string) (text, title string) {
	var r htmlReducer
	z := html.NewTokenizer(strings.NewReader(src))
	for {
		tt := z.Next()
		switch tt {
		case html.ErrorToken:
			return Normalize(string(bytes.TrimRightFunc(r.out, unicode.IsSpace))), Normalize(collapseSpace(r.title.String()))
		case html.StartTagToken, html.SelfClosingTagToken:
			name, _ := z.TagName()
			r.start(atom.Lookup(name), tt == html.SelfClosingTagToken)
		case html.EndTagToken:
			name, _ := z.TagName()
			r.end(atom.Lookup(name))
		case html.TextToken:
			r.text(z.Text())
		}
	}
}

// separator is what must be written before the next visible character.
type separator uint8

const (
	sepNone separator = iota
	sepSpace
	sepLine
	sepParagraph
)

type htmlReducer struct {
	out      []byte
	pending  separator
	skip     int // depth inside elements whose content is dropped
	pre      int // depth inside <pre>
	preStart bool
	inHead   bool
	inTitle  bool
	gotTitle bool
	title    strings.Builder
}

var skipped = map[atom.Atom]bool{
	atom.Script: true, atom.Style: true, atom.Noscript: true, atom.Template: true,
	atom.Iframe: true, atom.Noembed: true, atom.Noframes: true, atom.Svg: true,
}

// inHeadOnly are the elements that may appear in <head>; any other start tag
// means the head has ended even if </head> never comes, as browsers assume.
var inHeadOnly = map[atom.Atom]bool{
	atom.Title: true, atom.Meta: true, atom.Link: true, atom.Style: true, atom.Script: true,
	atom.Base: true, atom.Noscript: true, atom.Template: true,
}

var blocks = map[atom.Atom]bool{
	atom.Address: true, atom.Article: true, atom.Aside: true, atom.Blockquote: true,
	atom.Body: true, atom.Caption: true, atom.Center: true, atom.Dd: true, atom.Details: true,
	atom.Dialog: true, atom.Dir: true, atom.Div: true, atom.Dl: true, atom.Dt: true,
	atom.Fieldset: true, atom.Figcaption: true, atom.Figure: true, atom.Footer: true,
	atom.Form: true, atom.H1: true, atom.H2: true, atom.H3: true, atom.H4: true, atom.H5: true,
	atom.H6: true, atom.Header: true, atom.Hgroup: true, atom.Hr: true, atom.Legend: true,
	atom.Li: true, atom.Main: true, atom.Menu: true, atom.Nav: true, atom.Ol: true, atom.P: true,
	atom.Pre: true, atom.Section: true, atom.Summary: true, atom.Table: true, atom.Tbody: true,
	atom.Tfoot: true, atom.Thead: true, atom.Tr: true, atom.Ul: true,
}

func (r *htmlReducer) start(a atom.Atom, selfClosing bool) {
	if r.skip > 0 {
		// Inside dropped content only the nesting matters: an <svg> has
		// titles of its own, a <template> whole documents.
		if skipped[a] && !selfClosing {
			r.skip++
		}
		return
	}
	if r.inHead && !inHeadOnly[a] {
		r.inHead = false
	}
	switch {
	case a == atom.Head && !selfClosing:
		r.inHead = true
	case skipped[a]:
		if !selfClosing {
			r.skip++
		}
	case a == atom.Title:
		r.inTitle = !selfClosing
	case a == atom.Br:
		r.lineBreak()
	case a == atom.Td || a == atom.Th:
		r.separate(sepSpace)
	case blocks[a]:
		r.separate(sepParagraph)
		if a == atom.Pre && !selfClosing {
			r.pre++
			r.preStart = true
		}
	}
}

func (r *htmlReducer) end(a atom.Atom) {
	if r.skip > 0 {
		if skipped[a] {
			r.skip--
		}
		return
	}
	switch {
	case a == atom.Head:
		r.inHead = false
	case a == atom.Title:
		if r.inTitle {
			r.inTitle = false
			r.gotTitle = true
		}
	case a == atom.Br:
		r.lineBreak()
	case blocks[a]:
		if a == atom.Pre && r.pre > 0 {
			r.pre--
		}
		r.separate(sepParagraph)
	}
}

func (r *htmlReducer) text(data []byte) {
	if r.skip > 0 {
		return
	}
	if r.inTitle {
		if !r.gotTitle {
			r.title.Write(data)
		}
		return
	}
	if r.inHead {
		if len(bytes.TrimSpace(data)) == 0 {
			return
		}
		r.inHead = false
	}
	if r.pre > 0 {
		if r.preStart {
			// As in browsers, the newline right after <pre> is not content.
			data = bytes.TrimPrefix(data, []byte("\n"))
			r.preStart = false
		}
		if len(data) > 0 {
			r.flush()
			r.out = append(r.out, data...)
		}
		return
	}
	for len(data) > 0 {
		c, size := utf8.DecodeRune(data)
		if unicode.IsSpace(c) {
			r.separate(sepSpace)
		} else {
			r.flush()
			r.out = append(r.out, data[:size]...)
		}
		data = data[size:]
	}
}

// lineBreak handles <br>: a second one in a row is the old idiom for a new
// paragraph, and is kept as one.
func (r *htmlReducer) lineBreak() {
	if r.pending >= sepLine {
		r.separate(sepParagraph)
		return
	}
	r.separate(sepLine)
}

func (r *htmlReducer) separate(s separator) {
	r.pending = max(r.pending, s)
}

// flush writes the pending separator. Nothing is written before the first
// visible character, so the text never starts with blank lines.
func (r *htmlReducer) flush() {
	if len(r.out) == 0 {
		r.pending = sepNone
		return
	}
	switch r.pending {
	case sepSpace:
		if !unicode.IsSpace(lastRune(r.out)) {
			r.out = append(r.out, ' ')
		}
	case sepLine:
		r.out = append(bytes.TrimRightFunc(r.out, isHorizontalSpace), '\n')
	case sepParagraph:
		r.out = append(bytes.TrimRightFunc(r.out, unicode.IsSpace), '\n', '\n')
	}
	r.pending = sepNone
}

func lastRune(b []byte) rune {
	c, _ := utf8.DecodeLastRune(b)
	return c
}

func isHorizontalSpace(c rune) bool { return c != '\n' && unicode.IsSpace(c) }

func collapseSpace(s string) string { return strings.Join(strings.Fields(s), " ") }
