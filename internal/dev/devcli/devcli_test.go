package devcli_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/dev/devcli"
)

func run(args ...string) (int, string, string) {
	var stdout, stderr bytes.Buffer
	code := devcli.Run(context.Background(), devcli.Env{Stdout: &stdout, Stderr: &stderr}, args)
	return code, stdout.String(), stderr.String()
}

// Exit statuses and messages a user sees before any command connects to
// anything.
func TestRun(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		args []string
		code int
		want []string // in stderr
	}{
		{"no command", nil, 2, []string{"Usage: sluice-dev", "  demo ", "  drill "}},
		{"help", []string{"--help"}, 0, []string{"  demo ", "  drill "}},
		{"unknown command", []string{"dlq"}, 2, []string{`unknown command "dlq"`, "Usage: sluice-dev"}},
		{"drill flags", []string{"drill", "--help"}, 0, []string{"--database-url ($DATABASE_URL)", "--nats-url ($NATS_URL)", "--embedder-url ($EMBEDDER_URL)", "--timeout"}},
		{"demo flags", []string{"demo", "--help"}, 0, []string{"Usage of sluice-dev demo", "--bin", "--cluster", "--drill"}},
		{"unknown flag", []string{"drill", "--sorce", "x"}, 2, []string{"flag provided but not defined: -sorce"}},
		{"positional argument", []string{"drill", "now"}, 2, []string{`sluice-dev drill takes no arguments, got "now"`}},
		{"no embedder", []string{"drill", "--embedder-url", ""}, 2, []string{"set EMBEDDER_URL"}},
		{"bad NATS URL", []string{"drill", "--nats-url", "localhost"}, 2, []string{"NATS_URL", "want nats://user:password@host:port"}},
		{"up flags", []string{"up", "--help"}, 0, []string{"--dir", "--embedder-url", "--model", "--dims", "--encoding"}},
		{"up without a directory", []string{"up"}, 2, []string{"--dir is required"}},
		{"down of nothing", []string{"down", "--dir", t.TempDir()}, 1, []string{"no stack in", "sluice-dev up --dir"}},
		{"demo without binaries", []string{"demo", "--bin", t.TempDir()}, 1, []string{"binary producer not found", "make build"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			code, _, stderr := run(c.args...)
			if code != c.code {
				t.Errorf("sluice-dev %s: exit %d, want %d\n%s", strings.Join(c.args, " "), code, c.code, stderr)
			}
			for _, w := range c.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("sluice-dev %s: stderr lacks %q:\n%s", strings.Join(c.args, " "), w, stderr)
				}
			}
		})
	}
}
