// Package docs holds the project's documentation pages and the tests
// that keep them true to the code.
package docs

import (
	"bufio"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// claimPages are the pages whose reliability claims cite the tests
// that prove them, relative to the repository root.
var claimPages = []string{"docs/reliability.md", "docs/security.md", "docs/sources.md"}

var (
	backticked = regexp.MustCompile("`([^`]+)`")
	testName   = regexp.MustCompile(`^(Test\w+)(/\S*)?$`)
)

// TestCitedTestsExist reads every claim table (one whose last column is
// "proved by") and checks that each cited path exists and each cited test
// is declared: in the file or directory named before it in the same
// cell, or anywhere in the repository when none was named.
func TestCitedTestsExist(t *testing.T) {
	root := ".."
	decls := testDecls(t, root)
	cited := 0
	for _, page := range claimPages {
		f, err := os.Open(filepath.Join(root, page))
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		inTable, claims := false, false
		for line := 1; sc.Scan(); line++ {
			text := strings.TrimSpace(sc.Text())
			if !strings.HasPrefix(text, "|") {
				inTable = false
				continue
			}
			cells := strings.Split(text, "|")
			last := strings.TrimSpace(cells[len(cells)-2])
			if !inTable {
				// A table's first row is its header: claim tables
				// name their last column "proved by".
				inTable, claims = true, last == "proved by"
				continue
			}
			if !claims {
				continue
			}
			proof := last
			scope := ""
			for _, m := range backticked.FindAllStringSubmatch(proof, -1) {
				tok := m[1]
				switch {
				case strings.Contains(tok, "/") && !strings.HasPrefix(tok, "Test") && !strings.Contains(tok, " "):
					scope = filepath.Clean(tok)
					if _, err := os.Stat(filepath.Join(root, scope)); err != nil {
						t.Errorf("%s:%d cites %s, which does not exist", page, line, tok)
					}
				case testName.MatchString(tok):
					cited++
					name := testName.FindStringSubmatch(tok)[1]
					if !declaredIn(decls[name], scope) {
						where := "anywhere"
						if scope != "" {
							where = "in " + scope
						}
						t.Errorf("%s:%d cites %s, which is not declared %s", page, line, name, where)
					}
				}
			}
		}
		if err := sc.Err(); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	if cited == 0 {
		t.Fatal("no cited test found: the claim tables' format changed and this check no longer reads them")
	}
}

// testDecls maps each declared test function to the files declaring it.
func testDecls(t *testing.T, root string) map[string][]string {
	t.Helper()
	decl := regexp.MustCompile(`(?m)^func (Test\w+)\(`)
	out := map[string][]string{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "bin" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		for _, m := range decl.FindAllSubmatch(b, -1) {
			out[string(m[1])] = append(out[string(m[1])], rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// declaredIn reports whether one of files is scope, or lies under it.
func declaredIn(files []string, scope string) bool {
	for _, f := range files {
		if scope == "" || f == scope || strings.HasPrefix(f, scope+string(filepath.Separator)) {
			return true
		}
	}
	return false
}
