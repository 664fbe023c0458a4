package testlog

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// module writes a Go module whose packages pass, fail, time out and fail
// to build, so that the stream under test is one go test really wrote.
func module(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"go.mod": "module example.com/m\n\ngo 1.24\n",
		"good/good_test.go": `package good
import "testing"
func TestQuiet(t *testing.T) { t.Log("chatter of a passing test") }
`,
		"bad/bad_test.go": `package bad
import "testing"
func TestPasses(t *testing.T) { t.Log("chatter of a passing test") }
func TestBroken(t *testing.T) { t.Log("what the failure was about"); t.Fatal("the assertion that failed") }
func TestTable(t *testing.T) {
	t.Run("fine", func(t *testing.T) {})
	t.Run("wrong", func(t *testing.T) { t.Error("a subtest's failure") })
}
`,
		"hang/hang_test.go": `package hang
import ("testing"; "time")
func TestHangs(t *testing.T) { t.Log("before the hang"); time.Sleep(time.Minute) }
`,
		"broken/broken_test.go": "package broken\nimport \"testing\"\nfunc TestX(t *testing.T) { undefinedName() }\n",
		"empty/empty.go":        "package empty\n",
	}
	for name, text := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// The readable output holds every package's result line, the build error,
// the whole output of each failed test (subtests and the test a timeout
// struck included), and nothing of the tests that passed; the stream is
// kept whole; the summary names every failure.
func TestFollowShowsWhatFailedAndKeepsTheStream(t *testing.T) {
	t.Parallel()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("go test -json needs go in PATH: %v", err)
	}
	cmd := exec.Command(goBin, "test", "-json", "-count=1", "-timeout=3s", "./...")
	cmd.Dir = module(t)
	cmd.Env = append(os.Environ(), "GOFLAGS=", "GOWORK=off")
	stream, err := cmd.Output()
	if err == nil {
		t.Fatalf("go test passed a module with failing packages:\n%s", stream)
	}
	var out, raw bytes.Buffer
	sum, err := Follow(bytes.NewReader(stream), &out, &raw)
	if err != nil {
		t.Fatal(err)
	}
	text := out.String()
	for _, want := range []string{
		"ok  \texample.com/m/good",
		"?   \texample.com/m/empty",
		"FAIL\texample.com/m/bad",
		"FAIL\texample.com/m/hang",
		"undefined: undefinedName",
		"--- FAIL: TestBroken",
		"what the failure was about",
		"the assertion that failed",
		"--- FAIL: TestTable/wrong",
		"a subtest's failure",
		"before the hang",
		"test timed out",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}
	if strings.Index(text, "test timed out") > strings.Index(text, "FAIL\texample.com/m/hang") {
		t.Errorf("the timeout's panic comes after its package's result line:\n%s", text)
	}
	if strings.Contains(text, "chatter of a passing test") || strings.Contains(text, "TestQuiet") {
		t.Errorf("output shows a passing test:\n%s", text)
	}
	if !bytes.Equal(raw.Bytes(), stream) {
		t.Errorf("kept stream differs from go test's: %d bytes, want %d", raw.Len(), len(stream))
	}
	for _, want := range []string{"example.com/m/bad TestBroken", "example.com/m/bad TestTable", "example.com/m/bad", "example.com/m/hang", "example.com/m/broken"} {
		if !slices.ContainsFunc(sum.Failed, func(f string) bool { return strings.HasPrefix(f, want) }) {
			t.Errorf("summary's failures %q lack %q", sum.Failed, want)
		}
	}
	if !slices.ContainsFunc(sum.Tests, func(t Timing) bool { return t.Name == "example.com/m/good TestQuiet" && !t.Failed }) {
		t.Errorf("summary's tests %+v lack the passing one", sum.Tests)
	}
	var report bytes.Buffer
	sum.Write(&report, 3, "example.com/m/")
	for _, want := range []string{"slowest packages:", "slowest tests:", "failed:\n", "  bad TestBroken\n"} {
		if !strings.Contains(report.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, report.String())
		}
	}
}

// A line that is not an event is passed through as it is.
func TestFollowPassesOtherLinesThrough(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	if _, err := Follow(strings.NewReader("go: downloading example.com/x v1.0.0\n"), &out, nil); err != nil {
		t.Fatal(err)
	}
	if got := out.String(); got != "go: downloading example.com/x v1.0.0\n" {
		t.Errorf("output = %q", got)
	}
}
