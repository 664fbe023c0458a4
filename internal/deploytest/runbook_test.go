package deploytest

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// Every alert's runbook link lands on a README section.
func TestRunbookAnchorsExist(t *testing.T) {
	t.Parallel()
	alerts, err := os.ReadFile("../../deploy/prometheus/alerts.yml")
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	anchors := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^#{2,4} (.+)$`).FindAllStringSubmatch(string(readme), -1) {
		anchors[slug(m[1])] = true
	}
	links := regexp.MustCompile(`#(runbook-[a-z0-9-]+)`).FindAllStringSubmatch(string(alerts), -1)
	if len(links) == 0 {
		t.Fatal("no runbook links in alerts.yml")
	}
	for _, l := range links {
		if !anchors[l[1]] {
			t.Errorf("alerts.yml links to #%s, but no README heading has that anchor", l[1])
		}
	}
}

// slug turns a Markdown heading into its anchor the way GitHub does.
func slug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-', r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteRune('-')
		}
	}
	return b.String()
}
