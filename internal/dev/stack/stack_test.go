package stack_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sluicehq/sluice/internal/dev/localenv"
	"github.com/sluicehq/sluice/internal/dev/stack"
	"github.com/sluicehq/sluice/internal/dev/testenv"
)

// A stack keeps its index across a down and an up on the same directory:
// the document ingested before is still searchable after, served by the
// same database and streams, and each binary's environment file carries
// its own PostgreSQL role and NATS user.
func TestStackPersistsAcrossRestarts(t *testing.T) {
	bin := testenv.Binaries(t)
	dir := t.TempDir()
	// PostgreSQL runs as another user when the tests run as root.
	if err := os.Chmod(filepath.Dir(dir), 0o755); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	up := func() string {
		t.Helper()
		var out, errOut bytes.Buffer
		if err := stack.Up(ctx, stack.Config{Dir: dir, BinDir: bin, Stdout: &out, Stderr: &errOut}); err != nil {
			t.Fatalf("up: %v\n%s", err, errOut.String())
		}
		return out.String()
	}
	downWhenGone(t, bin, dir)
	t.Cleanup(func() { _ = stack.Down(context.Background(), dir, os.Stderr) })
	first := up()
	for _, want := range []string{"export DATABASE_URL='postgres://sluice_operator@", "export NATS_URL='nats://operator:", "export EMBEDDER_URL='http://127.0.0.1:", "sluice-dev down --dir " + dir} {
		if !strings.Contains(first, want) {
			t.Errorf("up printed no %q:\n%s", want, first)
		}
	}
	for name, want := range map[string][]string{
		"producer": {"postgres://sluice_producer@", "nats://producer:"},
		"consumer": {"postgres://sluice_consumer@", "nats://consumer:", "METRICS_ADDR="},
	} {
		b, err := os.ReadFile(filepath.Join(dir, "env", name+".env"))
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range want {
			if !strings.Contains(string(b), w) {
				t.Errorf("%s.env lacks %q:\n%s", name, w, b)
			}
		}
	}
	docs := t.TempDir()
	if err := os.WriteFile(filepath.Join(docs, "lock.txt"), []byte("The lock keeper opens the upper gate at dawn and writes the water level in the ledger."), 0o644); err != nil {
		t.Fatal(err)
	}
	shell(t, dir, bin, "producer", "producer --source kept "+docs)
	ownerURL := ownerURL(t, dir)
	if !localenv.Poll(90*time.Second, func() bool { return readyDocs(t, ownerURL) == 1 }) {
		t.Fatalf("the document was not stored within 90s; the services' logs:\n%s", logTails(t, dir))
	}

	if err := stack.Down(ctx, dir, os.Stderr); err != nil {
		t.Fatalf("down: %v", err)
	}
	if second := up(); second != first {
		t.Errorf("a second up printed another environment:\n%s\nthen\n%s", first, second)
	}
	if n := readyDocs(t, ownerURL); n != 1 {
		t.Errorf("%d ready documents after the restart, want the 1 ingested before", n)
	}
	out := shell(t, dir, bin, "sluice", `sluice search "the lock keeper opens the upper gate" --json`)
	if !strings.Contains(out, `"source_native_id": "lock.txt"`) {
		t.Errorf("search after the restart did not find the document:\n%s", out)
	}
	// The streams survived too: a sync run of the source publishes
	// nothing new and the index stays whole.
	shell(t, dir, bin, "producer", "producer --source kept --sync "+docs)
}

// shell runs script with bin on PATH after sourcing the environment file
// of client, and returns its stdout.
func shell(t *testing.T, dir, bin, client, script string) string {
	t.Helper()
	cmd := exec.Command("sh", "-ec", ". "+filepath.Join(dir, "env", client+".env")+"\n"+script)
	cmd.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s: %v\n%s\n%s", script, err, out.String(), errOut.String())
	}
	return out.String()
}

// ownerURL reads the stack's superuser URL from its state.
func ownerURL(t *testing.T, dir string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "env", "sluice.env"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "export DATABASE_URL='"); ok {
			return strings.Replace(strings.TrimSuffix(v, "'"), "sluice_operator@", "postgres@", 1)
		}
	}
	t.Fatalf("sluice.env has no DATABASE_URL:\n%s", b)
	return ""
}

func readyDocs(t *testing.T, url string) int {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var n int
	if err := conn.QueryRow(context.Background(), `SELECT count(*) FROM documents WHERE status = 'ready'`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// logTails returns the last lines of each of the stack's service logs.
func logTails(t *testing.T, dir string) string {
	t.Helper()
	paths, _ := filepath.Glob(filepath.Join(dir, "logs", "*.log"))
	var b strings.Builder
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		lines := strings.Split(strings.TrimSpace(string(data)), "\n")
		fmt.Fprintf(&b, "== %s\n%s\n", filepath.Base(p), strings.Join(lines[max(len(lines)-15, 0):], "\n"))
	}
	return b.String()
}
