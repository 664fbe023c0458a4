package secrets

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// referenceFind is the literal search the automaton replaced: at each
// byte of the text, every literal that starts with that byte is compared.
// It stays as the reference the automaton must agree with.
func referenceFind(text string) [][]int {
	lower := strings.Map(func(r rune) rune {
		if 'A' <= r && r <= 'Z' {
			return r + 'a' - 'A'
		}
		return r
	}, text)
	if len(lower) != len(text) { // strings.Map re-encodes invalid UTF-8
		b := []byte(text)
		for i, c := range b {
			b[i] = lowerByte(c)
		}
		lower = string(b)
	}
	cands := make([][]int, len(rules))
	for i := 0; i < len(text); i++ {
		for r, rl := range rules {
			for _, lit := range rl.literals {
				hay := text
				if rl.fold {
					hay = lower
				}
				if strings.HasPrefix(hay[i:], lit) {
					if c := cands[r]; len(c) == 0 || c[len(c)-1] != i {
						cands[r] = append(c, i)
					}
				}
			}
		}
	}
	return cands
}

// randomText mixes pieces of every literal, in any case, with words,
// digits and punctuation, so that literals overlap, nearly match and
// repeat.
func randomText(rng *rand.Rand) string {
	var pieces []string
	for _, r := range rules {
		pieces = append(pieces, r.literals...)
	}
	pieces = append(pieces, " ", "\n", "=", ":", "\"", "river ", "AKIAABCDEFGHIJKLMNOP", "ghp_", "----", "\xff", "é")
	var b strings.Builder
	for range rng.IntN(40) {
		p := pieces[rng.IntN(len(pieces))]
		switch rng.IntN(4) {
		case 0:
			p = strings.ToUpper(p)
		case 1:
			p = p[:rng.IntN(len(p)+1)]
		}
		b.WriteString(p)
	}
	return b.String()
}

// The automaton finds exactly the candidates the per-byte search found,
// over the scanner's corpus and random text.
func TestAutomatonMatchesReference(t *testing.T) {
	t.Parallel()
	var texts []string
	for _, name := range []string{"positives.txt", "misses.txt"} {
		raw, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		whole := strings.ReplaceAll(string(raw), "§", "")
		texts = append(texts, whole)
		texts = append(texts, strings.Split(whole, "\n-- ")...)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		texts = append(texts, randomText(rng))
	}
	for _, text := range texts {
		got, _ := candidates(literals, text, len(rules), len(rules))
		want := referenceFind(text)
		for i := range want {
			if len(got[i]) == 0 && len(want[i]) == 0 {
				continue
			}
			if !reflect.DeepEqual(got[i], want[i]) {
				t.Fatalf("rule %d (%s) in %q: automaton %v, reference %v", i, rules[i].name, text, got[i], want[i])
			}
		}
	}
}

// A prefilter reports its caller's groups as written, case and all.
func TestPrefilterGroups(t *testing.T) {
	t.Parallel()
	p := NewPrefilter([][]string{{"PRIVATE KEY"}, {"AKIA", "ASIA"}, {"sk-"}})
	h := p.Find("an akia and a PRIVATE KEY")
	if !h.Holds(0) || h.Holds(1) || h.Holds(2) {
		t.Fatalf("groups held: %v %v %v; want true false false", h.Holds(0), h.Holds(1), h.Holds(2))
	}
	if text := "x -----BEGIN RSA PRIVATE KEY----- y"; !reflect.DeepEqual(p.Find(text).Scan(), Scan(text)) {
		t.Fatalf("Hits.Scan %v, Scan %v", p.Find(text).Scan(), Scan(text))
	}
}
