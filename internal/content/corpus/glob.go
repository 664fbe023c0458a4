package corpus

import (
	"fmt"
	"path"
	"strings"
)

// Glob is one --include or --exclude pattern.
//
// A pattern without "/" is matched against a file's name, in any
// directory: "*.gz" excludes every gzip file of the tree. A pattern with
// "/" is matched against the slash-separated path relative to the walked
// input, segment by segment: "**" stands for any number of directories
// (none included), and every other segment has path.Match's syntax ("*",
// "?", "[a-z]", "\\" to escape). "vendor/**" matches everything under
// vendor/; "**/testdata/*.json" a JSON file in any testdata directory.
type Glob struct {
	pattern  string
	segments []string
}

// ParseGlob checks pattern and returns it as a Glob.
func ParseGlob(pattern string) (Glob, error) {
	p := strings.Trim(pattern, "/")
	if p == "" {
		return Glob{}, fmt.Errorf("pattern %q: give a name such as *.gz or a path such as docs/**", pattern)
	}
	segs := strings.Split(p, "/")
	for _, s := range segs {
		if s == "**" {
			continue
		}
		if strings.Contains(s, "**") {
			return Glob{}, fmt.Errorf("pattern %q: ** must be a whole path segment, as in docs/**/*.md", pattern)
		}
		if _, err := path.Match(s, ""); err != nil {
			return Glob{}, fmt.Errorf("pattern %q: %w; see path.Match's syntax", pattern, err)
		}
	}
	return Glob{pattern: pattern, segments: segs}, nil
}

// String returns the pattern as given.
func (g Glob) String() string { return g.pattern }

// Match reports whether rel, a slash-separated path relative to the
// walked input, matches g.
func (g Glob) Match(rel string) bool {
	if len(g.segments) == 1 && g.segments[0] != "**" {
		ok, _ := path.Match(g.segments[0], path.Base(rel))
		return ok
	}
	return matchSegments(g.segments, strings.Split(rel, "/"))
}

func matchSegments(pat, name []string) bool {
	for len(pat) > 0 {
		if pat[0] == "**" {
			for i := 0; i <= len(name); i++ {
				if matchSegments(pat[1:], name[i:]) {
					return true
				}
			}
			return false
		}
		if len(name) == 0 {
			return false
		}
		if ok, _ := path.Match(pat[0], name[0]); !ok {
			return false
		}
		pat, name = pat[1:], name[1:]
	}
	return len(name) == 0
}

// matchAny reports whether rel matches one of gs.
func matchAny(gs []Glob, rel string) bool {
	for _, g := range gs {
		if g.Match(rel) {
			return true
		}
	}
	return false
}
