package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// linkPages are the pages whose local links must resolve, relative to
// the repository root: the README and every page in docs/.
func linkPages(t *testing.T) []string {
	t.Helper()
	pages, err := filepath.Glob("*.md")
	if err != nil {
		t.Fatal(err)
	}
	out := []string{"README.md", "CHANGELOG.md"}
	for _, p := range pages {
		out = append(out, filepath.Join("docs", p))
	}
	return out
}

var (
	// mdLink is an inline link or image: [text](target).
	mdLink  = regexp.MustCompile(`!?\[[^\]]*\]\(([^)\s]+)\)`)
	heading = regexp.MustCompile(`^#{1,6} (.+)$`)
	fence   = regexp.MustCompile("^\\s*```")
	// slugDrop is what GitHub drops from a heading to make its anchor.
	slugDrop = regexp.MustCompile(`[^\p{L}\p{N} _-]`)
)

// TestLocalLinksResolve checks every relative link of the README and of
// docs/*.md: the file it names exists, and its #anchor is a heading of
// that file, as GitHub makes anchors.
func TestLocalLinksResolve(t *testing.T) {
	root := ".."
	checked := 0
	for _, page := range linkPages(t) {
		text, err := os.ReadFile(filepath.Join(root, page))
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range links(string(text)) {
			if strings.Contains(l.target, "://") || strings.HasPrefix(l.target, "mailto:") {
				continue
			}
			checked++
			file, anchor, _ := strings.Cut(l.target, "#")
			target := page
			if file != "" {
				target = filepath.Join(filepath.Dir(page), file)
				if _, err := os.Stat(filepath.Join(root, target)); err != nil {
					t.Errorf("%s:%d links to %s, which does not exist", page, l.line, l.target)
					continue
				}
			}
			if anchor == "" {
				continue
			}
			if !strings.HasSuffix(target, ".md") {
				t.Errorf("%s:%d links to an anchor of %s, which is no markdown page", page, l.line, target)
				continue
			}
			b, err := os.ReadFile(filepath.Join(root, target))
			if err != nil {
				t.Fatal(err)
			}
			if !anchors(string(b))[anchor] {
				t.Errorf("%s:%d links to %s, but %s has no heading with the anchor #%s", page, l.line, l.target, target, anchor)
			}
		}
	}
	if checked == 0 {
		t.Fatal("no local link found: the pages' link format changed and this check no longer reads them")
	}
}

// link is one link target and the line it is on.
type link struct {
	target string
	line   int
}

// links returns the link targets of a markdown text, outside code.
func links(text string) []link {
	var out []link
	inCode := false
	for i, line := range strings.Split(text, "\n") {
		if fence.MatchString(line) {
			inCode = !inCode
			continue
		}
		if inCode {
			continue
		}
		line = regexp.MustCompile("`[^`]*`").ReplaceAllString(line, "")
		for _, m := range mdLink.FindAllStringSubmatch(line, -1) {
			out = append(out, link{target: m[1], line: i + 1})
		}
	}
	return out
}

// anchors returns the anchors GitHub gives a page's headings: lowercase,
// punctuation but '-' and '_' dropped, spaces turned to '-', and a
// repeated anchor numbered -1, -2, …
func anchors(text string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	inCode := false
	for _, line := range strings.Split(text, "\n") {
		if fence.MatchString(line) {
			inCode = !inCode
			continue
		}
		m := heading.FindStringSubmatch(line)
		if inCode || m == nil {
			continue
		}
		a := slug(m[1])
		if n := seen[a]; n > 0 {
			out[a+"-"+itoa(n)] = true
		} else {
			out[a] = true
		}
		seen[a]++
	}
	return out
}

// slug is the anchor GitHub makes of a heading's text.
func slug(h string) string {
	h = strings.ToLower(strings.TrimSpace(h))
	return strings.ReplaceAll(slugDrop.ReplaceAllString(h, ""), " ", "-")
}

func itoa(n int) string { return strconv.Itoa(n) }

// The anchors are GitHub's.
func TestSlug(t *testing.T) {
	for h, want := range map[string]string{
		"Runbook: run halted":                     "runbook-run-halted",
		"Topology: `sluice nats setup`":           "topology-sluice-nats-setup",
		"Supersession, blue/green":                "supersession-bluegreen",
		"Consumer and dlq-replayer: the pipeline": "consumer-and-dlq-replayer-the-pipeline",
		"`make test-deploy`":                      "make-test-deploy",
		"snake_case and kebab-case":               "snake_case-and-kebab-case",
	} {
		if got := slug(h); got != want {
			t.Errorf("slug(%q) = %q, want %q", h, got, want)
		}
	}
}
