package archtest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
)

// maxDepth is the longest import chain allowed among the module's
// packages, counting both ends: cmd/sluice → internal/ops/cli → … → a leaf.
const maxDepth = 10

// consoleMustNotLink are the packages of the ingest path, which the
// console (and so `sluice console`, `sluice dlq`) has no use for.
var consoleMustNotLink = []string{"internal/ingest/consumer", "internal/ingest/pipeline", "internal/provider/embedder", "internal/ingest/producer"}

// module is the module's packages as go list reports them.
type module struct {
	path string // the module path
	root string // its directory
	// imports are each package's imports within the module, by path
	// relative to the module (internal/ops/cli), test files excluded.
	imports map[string][]string
}

// listModule runs go list over the whole module, once for all tests.
func listModule(t *testing.T) module {
	t.Helper()
	m, err := goList()
	if err != nil {
		t.Fatal(err)
	}
	return m
}

var goList = sync.OnceValues(func() (module, error) {
	out, err := exec.Command("go", "list", "-m", "-json").Output()
	if err != nil {
		return module{}, fmt.Errorf("go list -m: %w", err)
	}
	var m struct{ Path, Dir string }
	if err := json.Unmarshal(out, &m); err != nil {
		return module{}, fmt.Errorf("go list -m: %w", err)
	}
	cmd := exec.Command("go", "list", "-deps", "-json=ImportPath,Imports,Standard", "./...")
	cmd.Dir = m.Dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if out, err = cmd.Output(); err != nil {
		return module{}, fmt.Errorf("go list -deps: %w: %s", err, stderr.String())
	}
	mod := module{path: m.Path, root: m.Dir, imports: map[string][]string{}}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p struct {
			ImportPath string
			Imports    []string
			Standard   bool
		}
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return module{}, fmt.Errorf("go list -deps: %w", err)
		}
		rel, ok := mod.rel(p.ImportPath)
		if p.Standard || !ok {
			continue
		}
		var imports []string
		for _, imp := range p.Imports {
			if r, ok := mod.rel(imp); ok {
				imports = append(imports, r)
			}
		}
		mod.imports[rel] = imports
	}
	return mod, nil
})

// rel is importPath relative to the module, when it is the module's.
func (m module) rel(importPath string) (string, bool) {
	if importPath == m.path {
		return ".", true
	}
	return strings.CutPrefix(importPath, m.path+"/")
}

// longestChain returns the longest import chain from any package, first
// importer first. The graph has no cycles: go list would have failed.
func (m module) longestChain() []string {
	memo := map[string][]string{}
	var chain func(p string) []string
	chain = func(p string) []string {
		if c, ok := memo[p]; ok {
			return c
		}
		var best []string
		for _, imp := range m.imports[p] {
			if c := chain(imp); len(c) > len(best) {
				best = c
			}
		}
		memo[p] = append([]string{p}, best...)
		return memo[p]
	}
	var longest []string
	for _, p := range m.sorted() {
		if c := chain(p); len(c) > len(longest) {
			longest = c
		}
	}
	return longest
}

// deps returns every module package p depends on, directly or not.
func (m module) deps(p string) map[string]bool {
	seen := map[string]bool{}
	var walk func(string)
	walk = func(p string) {
		for _, imp := range m.imports[p] {
			if !seen[imp] {
				seen[imp] = true
				walk(imp)
			}
		}
	}
	walk(p)
	return seen
}

// sorted are the module's packages in order, so that failures read the
// same on every run.
func (m module) sorted() []string {
	ps := make([]string, 0, len(m.imports))
	for p := range m.imports {
		ps = append(ps, p)
	}
	slices.Sort(ps)
	return ps
}

// The import graph stays shallow: a newcomer reading a package down to
// its leaves reads at most maxDepth packages, and a change low in the
// graph rebuilds few floors.
func TestImportGraphDepth(t *testing.T) {
	t.Parallel()
	m := listModule(t)
	if c := m.longestChain(); len(c) > maxDepth {
		t.Errorf("the import graph is %d packages deep, over %d:\n\t%s\nmove what the chain's upper packages share into a lower package, or into the package that owns it",
			len(c), maxDepth, strings.Join(c, "\n\t→ "))
	}
}

// The console reads and replays dead letters; it must not link the
// ingest path (consumer, pipeline, embedder, producer), which only the
// services that ingest need.
func TestConsoleLinksNoIngestPath(t *testing.T) {
	t.Parallel()
	m := listModule(t)
	deps := m.deps("internal/ops/console")
	if len(deps) == 0 {
		t.Fatal("internal/ops/console depends on no module package: is it still there?")
	}
	for _, p := range consoleMustNotLink {
		if deps[p] {
			t.Errorf("internal/ops/console depends on %s: %s", p, strings.Join(m.chain(t, "internal/ops/console", p), " → "))
		}
	}
}

// chain returns a chain of imports from package from to package to.
func (m module) chain(t *testing.T, from, to string) []string {
	t.Helper()
	prev := map[string]string{from: ""}
	queue := []string{from}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if p == to {
			var c []string
			for ; p != ""; p = prev[p] {
				c = append([]string{p}, c...)
			}
			return c
		}
		for _, imp := range m.imports[p] {
			if _, ok := prev[imp]; !ok {
				prev[imp] = p
				queue = append(queue, imp)
			}
		}
	}
	return []string{from, "…", to}
}

// pkg/ is the public API: it never imports internal/. A constant both
// need lives in pkg/ and internal/ imports it.
func TestPkgImportsNoInternal(t *testing.T) {
	t.Parallel()
	m := listModule(t)
	n := 0
	for _, p := range m.sorted() {
		if !strings.HasPrefix(p, "pkg/") {
			continue
		}
		n++
		for _, imp := range m.imports[p] {
			if strings.HasPrefix(imp, "internal/") {
				t.Errorf("%s imports %s: move what it needs into pkg/, or let %s import pkg/ instead", p, imp, imp)
			}
		}
	}
	if n == 0 {
		t.Fatal("no pkg/ packages listed")
	}
}
