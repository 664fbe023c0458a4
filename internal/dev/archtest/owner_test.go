package archtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// owners is the one package whose non-test files may write each table;
// a package's subpackages count as the package (the conformance suite of
// pkg/vectorstore is its own). Everyone else calls the owner.
var owners = map[string]string{
	"dead_letters":              "internal/store/deadletter",
	"dead_letter_payloads":      "internal/store/deadletter",
	"dead_letter_history":       "internal/store/deadletter",
	"file_bytes":                "internal/store/deadletter",
	"file_bytes_refs":           "internal/store/deadletter",
	"documents":                 "internal/store/manifest",
	"ingest_manifest":           "internal/store/manifest",
	"sources":                   "internal/store/sources",
	"chunk_embeddings":          "pkg/vectorstore",
	"chunk_embeddings_previous": "pkg/vectorstore",
	"generation_embeddings":     "pkg/vectorstore",
	"index_generations":         "internal/store/generation",
	"index_generation_audit":    "internal/store/generation",
	"generation_backfill":       "internal/store/generation",
	"generation_backfill_queue": "internal/store/generation",
	"generation_parked":         "internal/store/generation",
	"bulk_batches":              "internal/store/bulk",
	"bulk_members":              "internal/store/bulk",
	"ingest_runs":               "internal/store/runs",
	"deletion_requests":         "internal/store/erase",
	"document_deletions":        "internal/store/erase",
	"object_ledger":             "internal/store/objects",
}

// writersBesideOwner are the packages that may write a table they do not
// own, with the reason.
var writersBesideOwner = map[string]map[string]string{
	// The benchmark's naive baseline is the pipeline written the
	// straightforward way, statement by statement, to be measured
	// against it; its search fixtures are loaded with COPY.
	"internal/dev/bench": {"documents": "baseline", "ingest_manifest": "baseline", "chunk_embeddings": "baseline", "ingest_runs": "baseline"},
	// The store's conformance suite needs documents rows to store
	// chunks of, and a pkg/ package cannot call internal/store/manifest.
	"pkg/vectorstore/storetest": {"documents": "fixtures"},
}

// writeStatement finds a write of a table in SQL text: the table named
// right after INSERT INTO, UPDATE, DELETE FROM or COPY. Reads, and the
// UPDATE of FOR UPDATE and DO UPDATE SET, do not match.
var writeStatement = regexp.MustCompile(`\b(?:INSERT\s+INTO|UPDATE|DELETE\s+FROM|COPY)\s+"?([a-z_]+)\b`)

// writingFunctions are the schema's functions that write a table (the
// owner's SECURITY DEFINER functions of migration 20): calling one is a
// write of its table.
var writingFunctions = regexp.MustCompile(`\b(purge_dead_letter_history|mark_generation_ready)\s*\(`)

// functionWrites maps each of writingFunctions to the table it writes.
var functionWrites = map[string]string{"purge_dead_letter_history": "dead_letter_history", "mark_generation_ready": "index_generations"}

// write is one write of a table found in the source.
type write struct {
	table, pkg string
	pos        token.Position
}

// findWrites returns every write of an owned table in the module's
// non-test Go files: in string literals, and COPY through
// pgx.Identifier (CopyFrom).
func findWrites(t *testing.T, root string) []write {
	t.Helper()
	var found []write
	err := walkSource(root, func(pkg string, fset *token.FileSet, f *ast.File) {
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.BasicLit:
				s, ok := stringLit(n)
				if !ok {
					return true
				}
				for _, m := range writeStatement.FindAllStringSubmatch(s, -1) {
					if _, ok := owners[m[1]]; ok {
						found = append(found, write{table: m[1], pkg: pkg, pos: fset.Position(n.Pos())})
					}
				}
				for _, m := range writingFunctions.FindAllStringSubmatch(s, -1) {
					found = append(found, write{table: functionWrites[m[1]], pkg: pkg, pos: fset.Position(n.Pos())})
				}
			case *ast.CompositeLit:
				if sel, ok := n.Type.(*ast.SelectorExpr); ok && sel.Sel.Name == "Identifier" && len(n.Elts) > 0 {
					if lit, ok := n.Elts[len(n.Elts)-1].(*ast.BasicLit); ok {
						if table, ok := stringLit(lit); ok {
							if _, ok := owners[table]; ok {
								found = append(found, write{table: table, pkg: pkg, pos: fset.Position(n.Pos())})
							}
						}
					}
				}
			}
			return true
		})
	})
	if err != nil {
		t.Fatalf("scan %s: %v", root, err)
	}
	return found
}

// walkSource parses every non-test Go file under root and hands it to
// visit with its package's path relative to root (internal/ops/cli).
func walkSource(root string, visit func(pkg string, fset *token.FileSet, f *ast.File)) error {
	fset := token.NewFileSet()
	return filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
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
		visit(filepath.ToSlash(rel), fset, f)
		return nil
	})
}

// stringLit returns the value of a string literal.
func stringLit(n *ast.BasicLit) (string, bool) {
	if n.Kind != token.STRING {
		return "", false
	}
	s, err := strconv.Unquote(n.Value)
	return s, err == nil
}

// owns reports whether package pkg may write table.
func owns(pkg, table string) bool {
	owner := owners[table]
	if pkg == owner || strings.HasPrefix(pkg, owner+"/") {
		return true
	}
	_, ok := writersBesideOwner[pkg][table]
	return ok
}

// Each table's write statements live in its owner package, so a
// newcomer finds them in one place and a change to the table's rules is
// made once.
func TestTablesAreWrittenByTheirOwners(t *testing.T) {
	t.Parallel()
	m := listModule(t)
	writes := findWrites(t, m.root)
	byOwner := map[string]int{}
	for _, w := range writes {
		if !owns(w.pkg, w.table) {
			t.Errorf("%s writes %s, which %s owns: call a function of %s instead (or add it there)", w.pos, w.table, owners[w.table], owners[w.table])
			continue
		}
		byOwner[w.table]++
	}
	// The scan must see the owners' own statements, or it finds nothing
	// anywhere.
	for table := range owners {
		if byOwner[table] == 0 {
			t.Errorf("found no write of %s at all, not even in %s: is the scan still reading the source?", table, owners[table])
		}
	}
}
