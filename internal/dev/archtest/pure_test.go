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
