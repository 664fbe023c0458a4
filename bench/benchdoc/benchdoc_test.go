package benchdoc

import (
	"os"
	"strings"
	"testing"
)

// The committed page is what the committed report renders to: the
// figures on docs/benchmarks.md are the bench's, never typed by hand.
func TestPageMatchesTheCommittedReport(t *testing.T) {
	r, err := Load("../results/latest.json")
	if err != nil {
		t.Fatal(err)
	}
	want, err := Render(r)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("../../docs/benchmarks.md")
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		g, w := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
		for i := 0; i < len(g) && i < len(w); i++ {
			if g[i] != w[i] {
				t.Fatalf("docs/benchmarks.md differs from what bench/results/latest.json renders, at line %d:\n  committed: %q\n  rendered:  %q\nregenerate it with: cd bench && go run ./cmd/benchdoc", i+1, g[i], w[i])
			}
		}
		t.Fatalf("docs/benchmarks.md differs in length from what bench/results/latest.json renders (%d lines, want %d); regenerate it with: cd bench && go run ./cmd/benchdoc", len(g), len(w))
	}
}
