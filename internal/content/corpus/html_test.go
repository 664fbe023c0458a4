package corpus

import "testing"

func TestReduceHTML(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name      string
		src       string
		wantText  string
		wantTitle string
	}{
		{
			name: "document",
			src: `<!DOCTYPE html><html><head><meta charset="utf-8"><title> Caf&eacute;
				 menu </title><style>body{color:red}</style><script>var x = "<p>no</p>";</script></head>
				<body><h1>Menu</h1><p>Coffee &amp; tea,   served
				hot.</p><p>Open &lt;daily&gt;&nbsp;now</p><noscript>enable JS</noscript></body></html>`,
			wantText:  "Menu\n\nCoffee & tea, served hot.\n\nOpen <daily> now",
			wantTitle: "Café menu",
		},
		{
			name:     "inline elements do not break",
			src:      "<p>a <b>bold</b> <a href='x'>link</a>s</p>",
			wantText: "a bold links",
		},
		{
			name:     "br breaks lines, two make a paragraph",
			src:      "<p>line one<br>line two<br/><br>next</p>",
			wantText: "line one\nline two\n\nnext",
		},
		{
			name:     "lists and divs",
			src:      "<div>intro<ul><li>one</li><li>two</li></ul></div><div>end</div>",
			wantText: "intro\n\none\n\ntwo\n\nend",
		},
		{
			name:     "pre keeps layout",
			src:      "<p>code:</p><pre>\nfunc f() {\n    return 1\n}\n</pre><p>after</p>",
			wantText: "code:\n\nfunc f() {\n    return 1\n}\n\nafter",
		},
		{
			name:     "table cells are separated",
			src:      "<table><tr><th>k</th><th>v</th></tr><tr><td>a</td><td>1</td></tr></table>",
			wantText: "k v\n\na 1",
		},
		{
			name:      "head without a closing tag ends at body content",
			src:       "<html><head><title>T</title><link rel=x><p>text",
			wantText:  "text",
			wantTitle: "T",
		},
		{
			name:      "svg titles and template content are not the page's",
			src:       "<body><svg><title>icon</title><text>x</text></svg><template><p>tpl</p></template><p>body</p><title>late</title></body>",
			wantText:  "body",
			wantTitle: "late",
		},
		{
			name:     "only the first title counts",
			src:      "<title>first</title><title>second</title>x",
			wantText: "x", wantTitle: "first",
		},
		{
			name:     "comments dropped, numeric entities decoded",
			src:      "<p>a<!-- hidden -->b &#233;&#x1F600;</p>",
			wantText: "ab \u00e9\U0001F600",
		},
		{
			name:     "only markup",
			src:      "<html><head><title></title></head><body> <p> </p> </body></html>",
			wantText: "",
		},
		{
			name:     "plain text passes through collapsed",
			src:      "just   text\n\nmore",
			wantText: "just text more",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			text, title := ReduceHTML(tt.src)
			if text != tt.wantText {
				t.Errorf("text = %q\nwant   %q", text, tt.wantText)
			}
			if title != tt.wantTitle {
				t.Errorf("title = %q, want %q", title, tt.wantTitle)
			}
		})
	}
}
