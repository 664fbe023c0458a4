package docs

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

var (
	// layoutRow is a row of layout.md's tables: its first cell.
	layoutRow = regexp.MustCompile("(?m)^\\| (`[^|]+) \\|")
	// codePath is one backticked path in a first cell.
	codePath = regexp.MustCompile("`([^`]+)`")
)

// layoutPaths returns the paths layout.md's tables name in their first
// column.
func layoutPaths(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile("layout.md")
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, row := range layoutRow.FindAllStringSubmatch(string(b), -1) {
		for _, m := range codePath.FindAllStringSubmatch(row[1], -1) {
			paths = append(paths, strings.TrimSuffix(m[1], "/"))
		}
	}
	return paths
}

// layout.md names every package of the module, and every path it names
// exists: the page is the tree's map and cannot drift from it.
func TestLayoutNamesEveryPackage(t *testing.T) {
	named := map[string]bool{}
	for _, p := range layoutPaths(t) {
		named[p] = true
		if _, err := os.Stat("../" + p); err != nil {
			t.Errorf("layout.md names %s, which does not exist: update the page", p)
		}
	}
	cmd := exec.Command("go", "list", "-f", "{{.ImportPath}}", "./...")
	cmd.Dir = ".."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	const module = "github.com/sluicehq/sluice/"
	n := 0
	for _, line := range strings.Fields(string(out)) {
		p, ok := strings.CutPrefix(line, module)
		if !ok {
			continue
		}
		n++
		if !named[p] {
			t.Errorf("%s is not in docs/layout.md: add a row for it under its layer", p)
		}
	}
	if n < 50 {
		t.Fatalf("go list reported %d packages: is it listing the module?", n)
	}
}
