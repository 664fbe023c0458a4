package stack_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/dev/localenv"
	"github.com/sluicehq/sluice/internal/dev/testenv"
)

// quickstartMarkers enclose the commands of docs/quickstart.md that
// TestQuickstartWithoutDocker runs.
const (
	quickstartBegin = "<!-- quickstart-test: begin -->"
	quickstartEnd   = "<!-- quickstart-test: end -->"
)

// The quickstart's variant without Docker works as written: its shell
// blocks run one after the other in a fresh directory whose bin/ holds the
// commands (`make build` is the one line left out: the test built them),
// against this machine's documentation. The search finds the note the page
// adds, and after the file is removed and the source synced, the same
// search no longer does.
func TestQuickstartWithoutDocker(t *testing.T) {
	bin := testenv.Binaries(t)
	blocks := quickstartBlocks(t)
	if len(blocks) != 6 {
		t.Fatalf("docs/quickstart.md has %d shell blocks between its markers, want the 6 this test knows: update both", len(blocks))
	}
	work := t.TempDir()
	// PostgreSQL runs as another user when the tests run as root.
	for _, d := range []string{filepath.Dir(work), work} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(bin, filepath.Join(work, "bin")); err != nil {
		t.Fatal(err)
	}
	downWhenGone(t, bin, filepath.Join(work, "sluice-data"))
	t.Cleanup(func() {
		// The page's last block stops the stack; after a failure earlier,
		// stop it here.
		cmd := exec.Command(filepath.Join(bin, "sluice-dev"), "down", "--dir", "sluice-data")
		cmd.Dir = work
		_ = cmd.Run()
	})
	out := make([]string, len(blocks))
	for i, b := range blocks {
		out[i] = runBlock(t, work, b)
	}
	const note = "note.txt"
	if top := firstHit(out[3]); top != note {
		t.Errorf("the search found %q first, want the note the page adds, %s:\n%s", top, note, out[3])
	}
	if strings.Contains(out[4], note) {
		t.Errorf("after the note was removed and the source synced, the search still finds it:\n%s", out[4])
	}
	if !strings.Contains(out[2], "completed") {
		t.Errorf("sluice runs --wait shows no completed run:\n%s", out[2])
	}
}

// quickstartBlocks returns the shell blocks between the markers of
// docs/quickstart.md, with `make build` left out.
func quickstartBlocks(t *testing.T) []string {
	t.Helper()
	root, err := localenv.SourceRoot()
	if err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(filepath.Join(root, "docs", "quickstart.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(page), quickstartBegin)
	section, _, ok2 := strings.Cut(section, quickstartEnd)
	if !ok || !ok2 {
		t.Fatalf("docs/quickstart.md lacks %s … %s", quickstartBegin, quickstartEnd)
	}
	var blocks []string
	for _, m := range regexp.MustCompile("(?s)```sh\n(.*?)```").FindAllStringSubmatch(section, -1) {
		var lines []string
		for _, line := range strings.Split(m[1], "\n") {
			if strings.TrimSpace(line) != "make build" {
				lines = append(lines, line)
			}
		}
		blocks = append(blocks, strings.Join(lines, "\n"))
	}
	return blocks
}

// runBlock runs one block with sh -e in dir and returns its stdout.
func runBlock(t *testing.T, dir, block string) string {
	t.Helper()
	cmd := exec.Command("sh", "-ec", block)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s\n: %v\nstdout:\n%s\nstderr:\n%s", block, err, stdout.String(), stderr.String())
	}
	t.Logf("$ %s\n%s", block, stdout.String())
	return stdout.String()
}

// firstHit is the SOURCE_NATIVE_ID of the first hit in sluice search's
// table, or "" when it has none.
func firstHit(table string) string {
	lines := strings.Split(strings.TrimSpace(table), "\n")
	if len(lines) < 2 || !strings.HasPrefix(lines[0], "RANK") {
		return ""
	}
	fields := strings.Fields(lines[1])
	if len(fields) < 4 {
		return ""
	}
	return fields[3]
}
