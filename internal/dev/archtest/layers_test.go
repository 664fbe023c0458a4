package archtest

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// layers are internal/'s folders from the bottom up. A package may import
// packages of its own layer and of the layers below it, and pkg/; never
// one above. internal/dev is apart: the development tooling may import
// anything, and nothing outside it imports it.
var layers = []string{
	"platform", // settings, service bootstrap, NATS and its topology, telemetry
	"provider", // the embedding provider: clients, tokenizers, budgets
	"content",  // reading, chunking and screening documents
	"store",    // the owners of the tables
	"ingest",   // producing, publishing, embedding and storing chunks
	"failure",  // dead letters after the outbox: triage, replay, alerts, retention
	"ops",      // the operator's CLI, console and reconcile
}

// layerOf returns the layer of a module package, its rank in layers (-1
// for pkg/ and cmd/, len(layers) for internal/dev), and whether the
// package has one at all.
func layerOf(p string) (name string, rank int, ok bool) {
	rest, internal := strings.CutPrefix(p, "internal/")
	if !internal {
		return "", -1, true
	}
	name, _, _ = strings.Cut(rest, "/")
	if name == "dev" {
		return name, len(layers), true
	}
	rank = slices.Index(layers, name)
	return name, rank, rank >= 0
}

// layerViolations returns a line for each import that goes up a layer or
// into internal/dev, and for each internal package outside every layer.
func layerViolations(imports map[string][]string) []string {
	var bad []string
	ps := make([]string, 0, len(imports))
	for p := range imports {
		ps = append(ps, p)
	}
	slices.Sort(ps)
	for _, p := range ps {
		name, rank, ok := layerOf(p)
		if !ok {
			bad = append(bad, fmt.Sprintf("%s is in no layer: move it under internal/{%s} or internal/dev", p, strings.Join(layers, ",")))
			continue
		}
		if !strings.HasPrefix(p, "internal/") || name == "dev" {
			continue
		}
		for _, imp := range imports[p] {
			iname, irank, ok := layerOf(imp)
			switch {
			case !ok:
				continue // reported as its own package
			case iname == "dev":
				bad = append(bad, fmt.Sprintf("%s imports %s: the product never links development tooling", p, imp))
			case irank > rank:
				bad = append(bad, fmt.Sprintf("%s (%s) imports %s (%s), a layer above it: move what both need down to %s or below, or pass it in", p, name, imp, iname, name))
			}
		}
	}
	return bad
}

// The layers are visible in the tree and hold their direction: a
// newcomer knows from a package's folder what it may import.
func TestLayersImportDownward(t *testing.T) {
	t.Parallel()
	m := listModule(t)
	for _, v := range layerViolations(m.imports) {
		t.Error(v)
	}
	seen := map[string]bool{}
	for p := range m.imports {
		if name, _, ok := layerOf(p); ok && strings.HasPrefix(p, "internal/") {
			seen[name] = true
		}
	}
	for _, l := range layers {
		if !seen[l] {
			t.Errorf("no package in internal/%s: is the layer list still the tree's?", l)
		}
	}
}

// Each kind of violation is found from one import.
func TestLayerViolationsAreFound(t *testing.T) {
	t.Parallel()
	ok := map[string][]string{
		"internal/platform/config":  {"pkg/classify"},
		"internal/store/manifest":   {"internal/platform/policy"},
		"internal/ops/cli":          {"internal/store/manifest", "internal/ingest/publish"},
		"internal/dev/demo":         {"internal/ops/cli"},
		"cmd/sluice":                {"internal/ops/cli"},
		"internal/ingest":           {"internal/ingest/pipeline"},
		"internal/ingest/pipeline":  {"internal/ingest"},
		"internal/platform/service": {"internal/platform/config"},
	}
	if v := layerViolations(ok); len(v) != 0 {
		t.Fatalf("a clean graph reported: %q", v)
	}
	for name, extra := range map[string]map[string][]string{
		"upward":   {"internal/platform/config": {"internal/provider/embedder"}},
		"into dev": {"internal/ops/cli": {"internal/dev/demo"}},
		"no layer": {"internal/util": nil},
	} {
		g := map[string][]string{}
		for p, imps := range ok {
			g[p] = slices.Clone(imps)
		}
		for p, imps := range extra {
			g[p] = append(g[p], imps...)
		}
		if v := layerViolations(g); len(v) != 1 {
			t.Errorf("%s: want one violation, got %q", name, v)
		}
	}
}
