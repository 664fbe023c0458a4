package docs

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

var (
	// sectionCite is a citation of design.md in a comment: design §7 or
	// design §7.3 (invariant 3 of section 7), case-insensitive so that an
	// old "DESIGN §" citation is checked too.
	sectionCite = regexp.MustCompile(`(?i)\bdesign §(\d+)(?:\.(\d+))?`)
	// invariantCite is a citation of an invariant: invariant 12.
	invariantCite = regexp.MustCompile(`\binvariants? (\d+)\b`)
	// designSection is a section heading of design.md: ## 7. Invariants.
	designSection = regexp.MustCompile(`(?m)^## (\d+)\. `)
	// designInvariant is an item of the invariants' list: 12. **One quota.
	designInvariant = regexp.MustCompile(`(?m)^(\d+)\. \*\*`)
)

// design returns design.md's section numbers and invariant numbers.
func design(t *testing.T) (sections, invariants map[int]bool) {
	t.Helper()
	b, err := os.ReadFile("design.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	sections, invariants = map[int]bool{}, map[int]bool{}
	for _, m := range designSection.FindAllStringSubmatch(text, -1) {
		n, _ := strconv.Atoi(m[1])
		sections[n] = true
	}
	_, list, _ := strings.Cut(text, "## 7. Invariants")
	list, _, _ = strings.Cut(list, "\n## ")
	for _, m := range designInvariant.FindAllStringSubmatch(list, -1) {
		n, _ := strconv.Atoi(m[1])
		invariants[n] = true
	}
	if len(sections) < 9 || len(invariants) < 13 {
		t.Fatalf("design.md has %d sections and %d invariants: has its form changed?", len(sections), len(invariants))
	}
	return sections, invariants
}

// citationProblems returns what in text cites a section or an invariant
// design.md does not have.
func citationProblems(text string, sections, invariants map[int]bool) []string {
	var bad []string
	for _, m := range sectionCite.FindAllStringSubmatch(text, -1) {
		s, _ := strconv.Atoi(m[1])
		if !sections[s] {
			bad = append(bad, m[0]+": design.md has no section "+m[1])
			continue
		}
		if m[2] == "" {
			continue
		}
		if i, _ := strconv.Atoi(m[2]); s != 7 || !invariants[i] {
			bad = append(bad, m[0]+": design.md numbers only section 7's items, its invariants")
		}
	}
	for _, m := range invariantCite.FindAllStringSubmatch(text, -1) {
		if i, _ := strconv.Atoi(m[1]); !invariants[i] {
			bad = append(bad, m[0]+": design.md §7 has no invariant "+m[1])
		}
	}
	return bad
}

// Every comment that cites the design names a section or an invariant
// that docs/design.md has, so a reader who follows it finds it.
func TestDesignCitationsResolve(t *testing.T) {
	sections, invariants := design(t)
	cited := 0
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != ".." && (strings.HasPrefix(name, ".") || name == "testdata" || name == "bin") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || path == filepath.Join("..", "docs", "design_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		text := string(b)
		cited += len(sectionCite.FindAllString(text, -1)) + len(invariantCite.FindAllString(text, -1))
		for _, p := range citationProblems(text, sections, invariants) {
			t.Errorf("%s: %s", path, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if cited == 0 {
		t.Fatal("found no citation of the design at all: is the scan reading the source?")
	}
}

// A citation of a section or invariant that does not exist is found.
func TestDesignCitationProblemsAreFound(t *testing.T) {
	sections, invariants := design(t)
	for text, want := range map[string]int{
		"see design §4 and design §7.3, invariant 12": 0,
		"see DESIGN §12":    1,
		"see design §4.2":   1,
		"see invariant 99":  1,
		"see design §7.42.": 1,
	} {
		if got := citationProblems(text, sections, invariants); len(got) != want {
			t.Errorf("%q: want %d problems, got %q", text, want, got)
		}
	}
}
