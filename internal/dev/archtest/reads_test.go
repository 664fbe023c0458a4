package archtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// readersBesideOwner are the packages whose non-test files read a table
// they do not own (owners), with the reason. Each is a read that
// predates the rule: moving it into its owner removes its entry, and a
// read outside the owner that is not listed here fails the rule. The
// CLI, the console and the replayer read no dead-letter table.
var readersBesideOwner = map[string]map[string]string{
	"bench/cmd/sluice-river-peer": {
		"chunk_embeddings": "not yet moved",
	},
	"internal/dev/bench": {
		"chunk_embeddings":      "not yet moved",
		"documents":             "not yet moved",
		"generation_embeddings": "not yet moved",
		"ingest_manifest":       "not yet moved",
	},
	"internal/dev/demo": {
		"dead_letters":    "not yet moved",
		"documents":       "not yet moved",
		"ingest_manifest": "not yet moved",
	},
	"internal/dev/drill": {
		"chunk_embeddings": "not yet moved",
		"dead_letters":     "not yet moved",
		"ingest_manifest":  "not yet moved",
	},
	"internal/ingest/pipeline": {
		"documents":       "not yet moved",
		"ingest_manifest": "not yet moved",
		"ingest_runs":     "not yet moved",
	},
	"internal/ops/reconcile": {
		"chunk_embeddings": "not yet moved",
		"dead_letters":     "not yet moved",
		"documents":        "not yet moved",
		"ingest_manifest":  "not yet moved",
	},
	"internal/store/deadletter": {
		"chunk_embeddings":   "not yet moved",
		"document_deletions": "not yet moved",
		"documents":          "not yet moved",
		"ingest_manifest":    "not yet moved",
	},
	"internal/store/erase": {
		"bulk_members":              "not yet moved",
		"chunk_embeddings":          "not yet moved",
		"chunk_embeddings_previous": "not yet moved",
		"dead_letter_payloads":      "not yet moved",
		"dead_letters":              "not yet moved",
		"documents":                 "not yet moved",
		"generation_embeddings":     "not yet moved",
		"ingest_manifest":           "not yet moved",
	},
	"internal/store/generation": {
		"chunk_embeddings":      "not yet moved",
		"documents":             "not yet moved",
		"generation_embeddings": "not yet moved",
		"ingest_manifest":       "not yet moved",
	},
	"internal/store/manifest": {
		"dead_letters": "not yet moved: its retention statement joins it, and deadletter imports manifest",
	},
	"internal/store/runs": {
		"ingest_manifest": "not yet moved",
	},
	"pkg/vectorstore": {
		"documents": "not yet moved",
	},
}

// readStatement finds a read of a table in SQL text: the table named
// right after FROM or JOIN. The FROM of DELETE FROM is a write, which
// writeStatement finds; group 1 catches it so that it is skipped.
var readStatement = regexp.MustCompile(`\b(DELETE\s+)?(?:FROM|JOIN)\s+"?([a-z_]+)\b`)

// read is one read of a table found in the source.
type read struct {
	table, pkg string
	pos        token.Position
}

// readsIn returns the reads of owned tables in the string literals of f,
// a file of package pkg.
func readsIn(pkg string, fset *token.FileSet, f *ast.File) []read {
	var found []read
	ast.Inspect(f, func(n ast.Node) bool {
		lit, ok := n.(*ast.BasicLit)
		if !ok {
			return true
		}
		s, ok := stringLit(lit)
		if !ok {
			return true
		}
		for _, m := range readStatement.FindAllStringSubmatch(s, -1) {
			if _, owned := owners[m[2]]; owned && m[1] == "" {
				found = append(found, read{table: m[2], pkg: pkg, pos: fset.Position(lit.Pos())})
			}
		}
		return true
	})
	return found
}

// readViolations says, for each read of reads its package may not make,
// where it is and whom to call instead.
func readViolations(reads []read, beside map[string]map[string]string) []string {
	var out []string
	for _, r := range reads {
		owner := owners[r.table]
		if r.pkg == owner || strings.HasPrefix(r.pkg, owner+"/") {
			continue
		}
		if _, ok := beside[r.pkg][r.table]; ok {
			continue
		}
		out = append(out, r.pos.String()+": "+r.pkg+" reads "+r.table+", which "+owner+
			" owns: call a function of "+owner+" instead (or add it there)")
	}
	return out
}

// Each table's reads live in its owner too, with its writes, so that a
// value derived from its columns (a dead letter's State) has one
// definition and a change to the table is made in one place.
func TestTablesAreReadByTheirOwners(t *testing.T) {
	t.Parallel()
	m := listModule(t)
	var reads []read
	if err := walkSource(m.root, func(pkg string, fset *token.FileSet, f *ast.File) {
		reads = append(reads, readsIn(pkg, fset, f)...)
	}); err != nil {
		t.Fatalf("scan %s: %v", m.root, err)
	}
	for _, v := range readViolations(reads, readersBesideOwner) {
		t.Error(v)
	}
	// An exception whose read is gone is one a new read could hide behind.
	for pkg, tables := range readersBesideOwner {
		for table := range tables {
			if !slices.ContainsFunc(reads, func(r read) bool { return r.pkg == pkg && r.table == table }) {
				t.Errorf("readersBesideOwner lists %s reading %s, which it no longer does: remove the entry", pkg, table)
			}
		}
	}
	// The scan must see the owners' own reads, or it finds nothing.
	for _, table := range []string{"dead_letters", "dead_letter_payloads", "dead_letter_history"} {
		if !slices.ContainsFunc(reads, func(r read) bool { return r.table == table && r.pkg == owners[table] }) {
			t.Errorf("found no read of %s in %s: is the scan still reading the source?", table, owners[table])
		}
	}
}

// The rule fails on one read of a dead-letter table outside its owner,
// naming the file, the line and the owner, and not on the owner's own
// read, a delete, or a FROM that names no table.
func TestReadRuleFailsOnOneRead(t *testing.T) {
	t.Parallel()
	const src = `package cli

const (
	owned   = "SELECT 1"
	deleted = "DELETE FROM dead_letters WHERE false"
	epoch   = "SELECT extract(epoch FROM at) FROM unowned"
	stray   = "SELECT count(*) FROM dead_letters WHERE resolved_at IS NULL"
)
`
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "internal/ops/cli/stray.go", src, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	got := readViolations(readsIn("internal/ops/cli", fset, f), nil)
	want := "internal/ops/cli/stray.go:7:12: internal/ops/cli reads dead_letters, which internal/store/deadletter owns: " +
		"call a function of internal/store/deadletter instead (or add it there)"
	if len(got) != 1 || got[0] != want {
		t.Errorf("violations %q; want exactly %q", got, want)
	}
	if got := readViolations(readsIn("internal/store/deadletter", fset, f), nil); len(got) != 0 {
		t.Errorf("the owner's own read: violations %q; want none", got)
	}
	exempt := map[string]map[string]string{"internal/ops/cli": {"dead_letters": "test"}}
	if got := readViolations(readsIn("internal/ops/cli", fset, f), exempt); len(got) != 0 {
		t.Errorf("an exempt read: violations %q; want none", got)
	}
}
