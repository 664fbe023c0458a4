package archtest

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// devCommands are the commands under cmd/ that are development tools, each
// with the reason it is one. Every other command is a product binary: it
// ships in the image (Dockerfile) and links no internal/dev package.
var devCommands = map[string]string{
	"cmd/sluice-dev": "the demo and the drill: they build nats-server with go, run initdb and supervise local processes, which the image cannot",
	"cmd/embed-sim": "the embedding simulator, a stand-in for a provider: tests, the demo and the bench run it, and the compose stack runs it " +
		"from an image of its own (the Dockerfile's embed-sim target), never the product's",
	"cmd/sluice-bench": "the benchmark harness (make bench), which starts every service against local servers",
}

// devTree holds the development packages the product must not link.
const devTree = "internal/dev/"

// shipped are the files that build the product image: each builds the
// product commands in one go build line, and dev commands, if any, only
// in lines of their own.
var shipped = []string{"Dockerfile", "deploy/local/test-deploy.sh"}

// products returns the product commands: every cmd/ package but
// devCommands, sorted.
func (m module) products() []string {
	var out []string
	for _, p := range m.sorted() {
		if _, dev := devCommands[p]; strings.HasPrefix(p, "cmd/") && !dev {
			out = append(out, p)
		}
	}
	return out
}

// devLinks returns, for each product command that links an internal/dev
// package, the import chain to each place the product's graph crosses
// into internal/dev: a product package importing a dev one.
func (m module) devLinks(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, cmd := range m.products() {
		inProduct := m.deps(cmd)
		inProduct[cmd] = true
		crossings := map[string]bool{}
		for p := range inProduct {
			if strings.HasPrefix(p, devTree) {
				continue
			}
			for _, imp := range m.imports[p] {
				if strings.HasPrefix(imp, devTree) {
					crossings[imp] = true
				}
			}
		}
		for _, dev := range sortedSet(crossings) {
			out = append(out, fmt.Sprintf("%s links %s: %s", cmd, dev, strings.Join(m.chain(t, cmd, dev), " → ")))
		}
	}
	return out
}

func sortedSet(s map[string]bool) []string {
	out := make([]string, 0, len(s))
	for k := range s {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// The product ships the product: no product command depends, directly
// or not, on internal/dev, whose packages launch toolchains and local
// servers that the image does not hold.
func TestProductLinksNoDev(t *testing.T) {
	t.Parallel()
	m := listModule(t)
	for cmd := range devCommands {
		if _, ok := m.imports[cmd]; !ok {
			t.Errorf("devCommands names %s, which is not a package of the module: remove it", cmd)
		}
	}
	if ps := m.products(); !slices.Contains(ps, "cmd/sluice") || !slices.Contains(ps, "cmd/consumer") {
		t.Fatalf("product commands %v lack cmd/sluice or cmd/consumer: is cmd/ still listed?", ps)
	}
	for _, l := range m.devLinks(t) {
		t.Errorf("%s\nmove the command into a development binary (devCommands), or what the product needs out of %s", l, devTree)
	}
}

// The rule fails on one import: a product package that imports a dev
// package, directly or through another dev package, is named with its
// chain; dev commands may link dev packages.
func TestDevLinksFindsOneImport(t *testing.T) {
	t.Parallel()
	m := module{imports: map[string][]string{
		"cmd/sluice":               {"internal/ops/cli"},
		"cmd/consumer":             {"internal/ingest/consumer"},
		"cmd/sluice-dev":           {"internal/dev/devcli"},
		"internal/ops/cli":         {"internal/platform/config"},
		"internal/ingest/consumer": {"internal/platform/config"},
		"internal/dev/devcli":      {"internal/dev/demo", "internal/platform/config"},
		"internal/dev/demo":        {"internal/dev/localenv"},
		"internal/dev/localenv":    nil,
		"internal/platform/config": nil,
	}}
	if got := m.devLinks(t); len(got) != 0 {
		t.Fatalf("clean graph: %q, want no links", got)
	}
	m.imports["internal/ops/cli"] = append(m.imports["internal/ops/cli"], "internal/dev/demo")
	want := []string{"cmd/sluice links internal/dev/demo: cmd/sluice → internal/ops/cli → internal/dev/demo"}
	if got := m.devLinks(t); !slices.Equal(got, want) {
		t.Fatalf("internal/ops/cli importing internal/dev/demo: %q, want %q", got, want)
	}
}

// buildLine is a go build command; cmdArg is a command package it names.
var (
	buildLine = regexp.MustCompile(`(?i)\bgo\s+build\b.*`)
	cmdArg    = regexp.MustCompile(`\./cmd/[^\s"']*`)
)

// The files that build the image build every product command in one go
// build, and dev commands only apart from it (embed-sim's own image), so
// that a new command is shipped, or listed in devCommands, on purpose.
func TestImageBuildsTheProduct(t *testing.T) {
	t.Parallel()
	m := listModule(t)
	products := m.products()
	for _, name := range shipped {
		b, err := os.ReadFile(filepath.Join(m.root, name))
		if err != nil {
			t.Fatal(err)
		}
		if problems := checkBuilds(string(b), products); len(problems) > 0 {
			t.Errorf("%s:\n\t%s", name, strings.Join(problems, "\n\t"))
		}
	}
}

// checkBuilds holds the go build lines of text to building exactly
// products together, and dev commands only in other lines.
func checkBuilds(text string, products []string) (problems []string) {
	found := false
	for _, line := range buildLine.FindAllString(text, -1) {
		var built []string
		for _, a := range cmdArg.FindAllString(line, -1) {
			built = append(built, strings.TrimPrefix(a, "./"))
		}
		slices.Sort(built)
		switch {
		case len(built) == 0:
			continue
		case slices.Contains(built, "cmd/..."):
			problems = append(problems, fmt.Sprintf("%q builds every command, dev ones included: name the product commands %v", line, products))
		case slices.Equal(built, products):
			found = true
		case slices.ContainsFunc(built, func(c string) bool { _, dev := devCommands[c]; return !dev }):
			problems = append(problems, fmt.Sprintf("%q builds %v: build the product commands %v together, and a dev command only in a build of its own", line, built, products))
		}
	}
	if !found {
		problems = append(problems, fmt.Sprintf("no go build of the product commands %v", products))
	}
	return problems
}

// checkBuilds fails on a build of every command, on a product command
// missing from the product's build, and on a dev command built with it.
func TestCheckBuilds(t *testing.T) {
	t.Parallel()
	products := []string{"cmd/consumer", "cmd/sluice"}
	for _, c := range []struct {
		name, text string
		ok         bool
	}{
		{"product, then embed-sim apart", "go build -o /out/ ./cmd/sluice ./cmd/consumer\ngo build -o /sim/ ./cmd/embed-sim\n", true},
		{"every command", "go build -o /out/ ./cmd/...\n", false},
		{"a product command missing", "go build -o /out/ ./cmd/sluice\n", false},
		{"a dev command with the product", "go build -o /out/ ./cmd/sluice ./cmd/consumer ./cmd/sluice-dev\n", false},
		{"no build", "FROM scratch\n", false},
	} {
		if problems := checkBuilds(c.text, products); (len(problems) == 0) != c.ok {
			t.Errorf("%s: problems %q, want ok=%v", c.name, problems, c.ok)
		}
	}
}
