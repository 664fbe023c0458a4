package extract

import (
	"errors"
	"io"
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"

	"github.com/sluicehq/sluice/pkg/classify"
)

// htmlBlocks are the elements that end a paragraph.
var htmlBlocks = map[atom.Atom]bool{
	atom.P: true, atom.Div: true, atom.Li: true, atom.H1: true, atom.H2: true, atom.H3: true,
	atom.H4: true, atom.H5: true, atom.H6: true, atom.Tr: true, atom.Td: true, atom.Th: true,
	atom.Section: true, atom.Article: true, atom.Blockquote: true, atom.Pre: true,
	atom.Dt: true, atom.Dd: true, atom.Figcaption: true, atom.Caption: true, atom.Header: true,
	atom.Footer: true, atom.Aside: true, atom.Nav: true, atom.Ul: true, atom.Ol: true, atom.Table: true,
}

// htmlHidden are the elements whose content no reader sees.
var htmlHidden = map[atom.Atom]bool{
	atom.Script: true, atom.Style: true, atom.Noscript: true, atom.Template: true,
	atom.Iframe: true, atom.Svg: true, atom.Head: true,
}

// reduceHTML writes the readable text of an HTML or XHTML document into f,
// a paragraph per block element, and returns its <title>. The tokenizer
// knows only HTML's own entities, so an XHTML file's declared entities
// are never expanded.
func reduceHTML(r io.Reader, f *flow) (string, error) {
	z := html.NewTokenizer(r)
	var title strings.Builder
	hidden, inTitle := 0, false
	for {
		tt := z.Next()
		switch tt {
		case html.ErrorToken:
			if err := z.Err(); !errors.Is(err, io.EOF) {
				if e, ok := errors.AsType[*Error](err); ok {
					return "", e
				}
				return "", wrapf(classify.ClassCorrupt, err, "read HTML")
			}
			f.endParagraph()
			return normalize(strings.Join(strings.Fields(title.String()), " ")), nil
		case html.StartTagToken, html.SelfClosingTagToken, html.EndTagToken:
			name, _ := z.TagName()
			a := atom.Lookup(name)
			switch {
			case a == atom.Title:
				inTitle = tt == html.StartTagToken
			case htmlHidden[a] && tt == html.StartTagToken:
				hidden++
			case htmlHidden[a] && tt == html.EndTagToken:
				hidden = max(hidden-1, 0)
			case a == atom.Br:
				if err := f.write("\n"); err != nil {
					return "", err
				}
			case htmlBlocks[a]:
				f.endParagraph()
			}
		case html.TextToken:
			switch {
			case inTitle:
				if title.Len() < 4096 {
					title.Write(z.Text())
				}
			case hidden == 0:
				if err := f.write(strings.ReplaceAll(string(z.Text()), "\n", " ")); err != nil {
					return "", err
				}
			}
		}
	}
}

// reduceHTMLString is reduceHTML over decoded text.
func reduceHTMLString(s string, f *flow) (string, error) {
	return reduceHTML(strings.NewReader(s), f)
}
