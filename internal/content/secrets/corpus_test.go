package secrets_test

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/content/secrets"
)

// sample is one section of a corpus file under testdata.
type sample struct {
	// rule is the header's part before ": " in positives.txt, the rule
	// that must find the sample; empty in misses.txt.
	rule, name, text string
}

// metadata reports a sample that is a document's metadata, as JSON.
func (s sample) metadata() bool { return strings.HasPrefix(s.name, "metadata") }

// readCorpus reads a corpus file: a preamble, then sections each under a
// line "-- header --". Every § is removed: it keeps the file free of
// strings that look like live secrets.
func readCorpus(t *testing.T, name string, withRule bool) []sample {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	var out []sample
	for _, line := range strings.SplitAfter(strings.ReplaceAll(string(b), "§", ""), "\n") {
		if h, ok := strings.CutPrefix(strings.TrimSuffix(line, "\n"), "-- "); ok && strings.HasSuffix(h, " --") {
			s := sample{name: strings.TrimSuffix(h, " --")}
			if withRule {
				rule, rest, ok := strings.Cut(s.name, ": ")
				if !ok {
					t.Fatalf("%s: header %q names no rule", name, h)
				}
				s.rule, s.name = rule, rest
			}
			out = append(out, s)
			continue
		}
		if len(out) > 0 {
			out[len(out)-1].text += line
		}
	}
	if len(out) == 0 {
		t.Fatalf("%s holds no sample", name)
	}
	return out
}

// found returns the rules that find secrets in a sample.
func (s sample) found(t *testing.T) []string {
	t.Helper()
	var rules []string
	if s.metadata() {
		got, err := secrets.ScanMetadataJSON([]byte(s.text))
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		for _, f := range got {
			rules = append(rules, f.Rule)
		}
		return rules
	}
	for _, m := range secrets.Scan(s.text) {
		rules = append(rules, m.Rule)
	}
	return rules
}

// Debian's installed documentation is the negative corpus: real text,
// much of it about networks, keys and passwords, none of it a secret.
// Every Debian system has the licence texts and a copyright file per
// package; a fresh bookworm container has about a hundred of them.
const (
	minNegativeDocs = 80
	// maxDocBytes and maxCorpusBytes bound the test's cost: changelogs
	// alone are over 100 MiB decompressed on a desktop system.
	maxDocBytes    = 256 << 10
	maxCorpusBytes = 32 << 20
	// maxFalsePositiveRate is the share of negative documents that may be
	// flagged.
	maxFalsePositiveRate = 0.005
)

// negativeDocs reads Debian's documentation: licences and copyright
// files first, then READMEs and changelogs, gzipped or not, each once
// whatever links lead to it.
func negativeDocs(t *testing.T) map[string]string {
	t.Helper()
	var paths []string
	for _, pattern := range []string{
		"/usr/share/common-licenses/*", "/usr/share/doc/*/copyright",
		"/usr/share/doc/*/README*", "/usr/share/doc/*/changelog*", "/usr/share/doc/*/NEWS*",
	} {
		m, err := filepath.Glob(pattern)
		if err != nil {
			t.Fatal(err)
		}
		paths = append(paths, m...)
	}
	docs := map[string]string{}
	seen := map[string]bool{}
	total := 0
	for _, p := range paths {
		real, err := filepath.EvalSymlinks(p)
		if err != nil || seen[real] {
			continue
		}
		seen[real] = true
		text, err := readDoc(real)
		if err != nil || text == "" {
			continue
		}
		if total += len(text); total > maxCorpusBytes {
			break
		}
		docs[p] = text
	}
	if len(docs) < minNegativeDocs {
		t.Fatalf("found %d documents under /usr/share/doc and /usr/share/common-licenses; the false-positive measure needs at least %d: run on Debian or Ubuntu, whose base system installs them", len(docs), minNegativeDocs)
	}
	return docs
}

// readDoc reads up to maxDocBytes of a regular file, gunzipping .gz.
func readDoc(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return "", err
	}
	var r io.Reader = f
	if strings.HasSuffix(path, ".gz") {
		zr, err := gzip.NewReader(f)
		if err != nil {
			return "", err
		}
		r = zr
	}
	b, err := io.ReadAll(io.LimitReader(r, maxDocBytes))
	if err != nil || bytes.IndexByte(b, 0) >= 0 {
		return "", err // binary
	}
	return string(b), nil
}

// TestCorpusRecallAndFalsePositives measures the scanner: every positive
// sample must be found by its rule (recall 1), and fewer than 0.5% of
// Debian's documents may be flagged.
func TestCorpusRecallAndFalsePositives(t *testing.T) {
	t.Parallel()
	positives := readCorpus(t, "positives.txt", true)
	caught := 0
	kinds := map[string]bool{}
	for _, s := range positives {
		kinds[s.rule] = true
		if got := s.found(t); slices.Contains(got, s.rule) {
			caught++
		} else {
			t.Errorf("positive %q: want %s, found %v", s.name, s.rule, got)
		}
	}
	for _, rule := range secrets.Rules() {
		if !kinds[rule] {
			t.Errorf("positives.txt has no sample for %s", rule)
		}
	}
	recall := float64(caught) / float64(len(positives))

	docs := negativeDocs(t)
	var flagged []string
	size := 0
	for path, text := range docs {
		size += len(text)
		if m := secrets.Scan(text); len(m) > 0 {
			flagged = append(flagged, path)
			t.Logf("negative %s: %s at %q", path, m[0].Rule, excerpt(text, m[0]))
		}
	}
	fpRate := float64(len(flagged)) / float64(len(docs))
	t.Logf("recall %.3f (%d of %d positives); false positives %.3f%% (%d of %d documents, %.1f MiB)",
		recall, caught, len(positives), 100*fpRate, len(flagged), len(docs), float64(size)/(1<<20))
	if recall < 1 {
		t.Errorf("recall %.3f; want 1", recall)
	}
	if fpRate >= maxFalsePositiveRate {
		t.Errorf("false-positive rate %.3f%%; want under %.1f%%", 100*fpRate, 100*maxFalsePositiveRate)
	}
}

// excerpt shows where a negative was flagged, clipped.
func excerpt(text string, m secrets.Match) string {
	return text[max(0, m.Start-40):min(len(text), m.End+20, m.Start+120)]
}

// TestCorpusCloseMisses checks that text shaped like a secret, but
// standing for none, is not flagged.
func TestCorpusCloseMisses(t *testing.T) {
	t.Parallel()
	for _, s := range readCorpus(t, "misses.txt", false) {
		if got := s.found(t); len(got) > 0 {
			t.Errorf("close miss %q: found %v", s.name, got)
		}
	}
}
