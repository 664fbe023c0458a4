//go:build chaos

package demo_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/dev/demo"
	"github.com/sluicehq/sluice/internal/dev/testenv"
)

// The demo runs on a 3-node cluster with R3 streams, every client given
// all three URLs, and converges with nothing leaked or duplicated; every
// command its report prints with NATS names the three URLs.
func TestDemoOnCluster(t *testing.T) {
	t.Parallel()
	bin := testenv.Binaries(t)
	var stdout, stderr bytes.Buffer
	err := demo.Run(context.Background(), demo.Config{
		BinDir: bin, Documents: 30, Outage: 4 * time.Second, Timeout: 3 * time.Minute, Cluster: true,
		Stdout: &stdout, Stderr: &stderr,
	})
	if err != nil {
		t.Fatalf("demo: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	report := stdout.String()
	if !strings.Contains(report, "0 leaked, 0 duplicated") {
		t.Errorf("report lacks a clean reconcile:\n%s", report)
	}
	commands := 0
	for _, line := range strings.Split(report, "\n") {
		if !strings.Contains(line, "--nats-url") {
			continue
		}
		commands++
		if n := strings.Count(line, "nats://"); n != 3 {
			t.Errorf("a command of the report names %d NATS URLs, want the cluster's 3: %s", n, line)
		}
	}
	if commands == 0 {
		t.Errorf("the report prints no command with --nats-url:\n%s", report)
	}
}
