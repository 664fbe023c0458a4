package docs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// ruleFiles are the Prometheus rule files and rule tests whose alerts
// carry a runbook_url.
var ruleFiles = []string{"deploy/prometheus/alerts.yml", "deploy/prometheus/alerts_test.yml"}

// TestRunbookLinksLand parses the alert rules (and the rule tests' expected
// annotations) and checks that each runbook_url points at a heading of
// docs/operations.md.
func TestRunbookLinksLand(t *testing.T) {
	root := ".."
	ops, err := os.ReadFile(filepath.Join(root, "docs", "operations.md"))
	if err != nil {
		t.Fatal(err)
	}
	have := anchors(string(ops))
	found := 0
	for _, file := range ruleFiles {
		b, err := os.ReadFile(filepath.Join(root, file))
		if err != nil {
			t.Fatal(err)
		}
		var doc any
		if err := yaml.Unmarshal(b, &doc); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		for _, url := range runbookURLs(doc) {
			found++
			page, anchor, ok := strings.Cut(url, "#")
			switch {
			case !ok || !strings.HasSuffix(page, "/docs/operations.md"):
				t.Errorf("%s: runbook_url %q does not point into docs/operations.md", file, url)
			case !have[anchor]:
				t.Errorf("%s: runbook_url %q: docs/operations.md has no heading with the anchor #%s", file, url, anchor)
			}
		}
	}
	if found == 0 {
		t.Fatal("no runbook_url found in the rule files: their format changed and this check no longer reads them")
	}
}

// runbookURLs collects every runbook_url value in a decoded YAML tree.
func runbookURLs(v any) []string {
	var out []string
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			if s, ok := e.(string); ok && k == "runbook_url" {
				out = append(out, s)
				continue
			}
			out = append(out, runbookURLs(e)...)
		}
	case []any:
		for _, e := range v {
			out = append(out, runbookURLs(e)...)
		}
	}
	return out
}
