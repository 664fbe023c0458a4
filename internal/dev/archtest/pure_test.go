package archtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// The packages `make test` runs without the race detector (the
// Makefile's PURE_PKGS) are pure computation: they start no goroutine and
// share nothing between goroutines, so the detector has nothing to find
// in their own tests, and their concurrent use is raced in their callers'
// tests. A package that starts one must leave the list.
func TestPurePackagesStartNoGoroutine(t *testing.T) {
	makefile, err := os.ReadFile("../../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^PURE_PKGS := (.+)$`).FindSubmatch(makefile)
	if m == nil {
		t.Fatal("the Makefile has no PURE_PKGS line")
	}
	pkgs := strings.Fields(string(m[1]))
	if len(pkgs) == 0 {
		t.Fatal("PURE_PKGS is empty")
	}
	for _, pkg := range pkgs {
		for _, v := range impurities(t, filepath.Join("../../..", pkg)) {
			t.Errorf("%s is in PURE_PKGS, but %s: run its tests with the race detector instead", pkg, v)
		}
	}
}

// impurities names the go statements and sync imports of the non-test
// files of the package in dir.
func impurities(t *testing.T, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil || len(files) == 0 {
		t.Fatalf("%s: no Go files (%v)", dir, err)
	}
	var found []string
	fset := token.NewFileSet()
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			if p, _ := strconv.Unquote(imp.Path.Value); p == "sync" || p == "sync/atomic" {
				found = append(found, fset.Position(imp.Pos()).String()+" imports "+p)
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if g, ok := n.(*ast.GoStmt); ok {
				found = append(found, fset.Position(g.Pos()).String()+" starts a goroutine")
			}
			return true
		})
	}
	return found
}

// A test in a file built only without the race detector (`//go:build
// !race`) never runs in `make test`'s race pass, so the Makefile names it
// in UNRACED_TESTS, and its package in UNRACED_PKGS, for the pass that
// runs without it; a test left out of either would never run.
func TestUnracedTestsAreRun(t *testing.T) {
	makefile, err := os.ReadFile("../../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	tests := makeList(t, makefile, "UNRACED_TESTS")
	pkgs := makeList(t, makefile, "UNRACED_PKGS")
	found := map[string]bool{}
	for _, f := range unracedTestFiles(t, "../../..") {
		dir, _ := filepath.Rel("../../..", filepath.Dir(f.path))
		for _, name := range f.tests {
			found[name] = true
			if !tests[name] || !pkgs[dir] {
				t.Errorf("%s: %s is built with !race but the Makefile's UNRACED_TESTS or UNRACED_PKGS leaves it out, so no target runs it", f.path, name)
			}
		}
	}
	for name := range tests {
		if !found[name] {
			t.Errorf("UNRACED_TESTS names %s, which no file built with !race holds", name)
		}
	}
}

// makeList reads the words of the Makefile variable name.
func makeList(t *testing.T, makefile []byte, name string) map[string]bool {
	t.Helper()
	m := regexp.MustCompile(`(?m)^` + name + ` := (.+)$`).FindSubmatch(makefile)
	if m == nil {
		t.Fatalf("the Makefile has no %s line", name)
	}
	set := map[string]bool{}
	for _, w := range strings.Fields(string(m[1])) {
		set[w] = true
	}
	return set
}

// unracedFile is a test file built only without the race detector and
// the tests it holds.
type unracedFile struct {
	path  string
	tests []string
}

// unracedTestFiles finds the test files of the module under root that
// are built only without the race detector. The bench module, which
// `make test` runs apart and without it, is not walked.
func unracedTestFiles(t *testing.T, root string) []unracedFile {
	t.Helper()
	var files []unracedFile
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && (d.Name() == "bench" && filepath.Dir(path) == root || strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		if !builtOnlyWithoutRace(f) {
			return nil
		}
		u := unracedFile{path: path}
		for _, decl := range f.Decls {
			if fn, ok := decl.(*ast.FuncDecl); ok && fn.Recv == nil && strings.HasPrefix(fn.Name.Name, "Test") && fn.Name.Name != "TestMain" {
				u.tests = append(u.tests, fn.Name.Name)
			}
		}
		files = append(files, u)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// builtOnlyWithoutRace reports whether f's build constraint is !race.
func builtOnlyWithoutRace(f *ast.File) bool {
	for _, g := range f.Comments {
		if g.Pos() >= f.Package {
			break
		}
		for _, c := range g.List {
			if strings.TrimSpace(c.Text) == "//go:build !race" {
				return true
			}
		}
	}
	return false
}
