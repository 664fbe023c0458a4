package archtest

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// maxFuncLines is the longest a non-test function's body may be, in
// lines between its braces: past it a function does several jobs, and
// each wants a name.
const maxFuncLines = 60

// longFuncsAllowed are the functions that may be longer, by package path
// and name ("Type.Method" for a method), with the reason. Each is a
// table or a decoder read top to bottom, which splitting would only
// scatter.
var longFuncsAllowed = map[string]string{
	"internal/ingest/pipeline.NewMetrics":            "a table of metric definitions",
	"internal/dev/bench.runner.plan":                 "a table of the scenarios a run selects, in order",
	"internal/dev/bench.ratios":                      "a table of the ratios the report gives",
	"internal/content/extract.odsRows":               "a decoder: one XML token loop over a sheet's rows",
	"internal/dev/embedsim.Server.validateBatchFile": "a decoder: one pass over a request file's lines, as the provider validates it",
	"internal/content/chunk.splitter.window":         "the splitter's one scan over a chunk's window, whose state is the loop's",
}

// longFunc is a function over maxFuncLines.
type longFunc struct {
	key   string // package path and name, as in longFuncsAllowed
	lines int
	pos   token.Position
}

// longFuncs returns the non-test functions of the Go files under root
// whose body is over maxFuncLines lines.
func longFuncs(t *testing.T, root string) []longFunc {
	t.Helper()
	var found []longFunc
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "vendor" || name == "bin") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, filepath.Dir(path))
		if err != nil {
			return err
		}
		found = append(found, longFuncsOf(fset, f, filepath.ToSlash(rel))...)
		return nil
	})
	if err != nil {
		t.Fatalf("scan %s: %v", root, err)
	}
	return found
}

// longFuncsOf returns the functions of f, a file of package pkg, whose
// body is over maxFuncLines lines.
func longFuncsOf(fset *token.FileSet, f *ast.File, pkg string) []longFunc {
	var found []longFunc
	for _, decl := range f.Decls {
		fd, ok := decl.(*ast.FuncDecl)
		if !ok || fd.Body == nil {
			continue
		}
		n := fset.Position(fd.Body.Rbrace).Line - fset.Position(fd.Body.Lbrace).Line - 1
		if n <= maxFuncLines {
			continue
		}
		name := fd.Name.Name
		if fd.Recv != nil && len(fd.Recv.List) == 1 {
			typ := fd.Recv.List[0].Type
			if star, ok := typ.(*ast.StarExpr); ok {
				typ = star.X
			}
			if idx, ok := typ.(*ast.IndexExpr); ok {
				typ = idx.X
			}
			if id, ok := typ.(*ast.Ident); ok {
				name = id.Name + "." + name
			}
		}
		found = append(found, longFunc{key: pkg + "." + name, lines: n, pos: fset.Position(fd.Pos())})
	}
	return found
}

// Functions stay short enough to read at once: one over maxFuncLines
// lines is split into the jobs it does, unless it is a table or a
// decoder listed in longFuncsAllowed with its reason.
func TestFunctionsAreShort(t *testing.T) {
	t.Parallel()
	m := listModule(t)
	seen := map[string]bool{}
	for _, f := range longFuncs(t, m.root) {
		seen[f.key] = true
		if _, ok := longFuncsAllowed[f.key]; !ok {
			t.Errorf("%s: %s is %d lines, over %d: split it into the jobs it does", f.pos, f.key, f.lines, maxFuncLines)
		}
	}
	for key := range longFuncsAllowed {
		if !seen[key] {
			t.Errorf("longFuncsAllowed lists %s, which is no longer over %d lines (or no longer exists): remove it", key, maxFuncLines)
		}
	}
}

// A function one line over the limit is found, and one at it is not.
func TestLongFunctionIsFound(t *testing.T) {
	t.Parallel()
	body := func(n int) string { return strings.Repeat("\t_ = 0\n", n) }
	src := fmt.Sprintf("package p\n\ntype T struct{}\n\nfunc (*T) Long() {\n%s}\n\nfunc atLimit() {\n%s}\n", body(maxFuncLines+1), body(maxFuncLines))
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "p.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	got := longFuncsOf(fset, f, "internal/p")
	if len(got) != 1 || got[0].key != "internal/p.T.Long" || got[0].lines != maxFuncLines+1 {
		t.Fatalf("found %+v; want internal/p.T.Long at %d lines only", got, maxFuncLines+1)
	}
}
