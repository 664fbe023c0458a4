package devcli

import (
	"context"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/term"

	"github.com/sluicehq/sluice/internal/dev/demo"
)

// runDemo is `sluice-dev demo`.
func runDemo(ctx context.Context, env Env, args []string) error {
	l := newLoader(env, "demo")
	var o demo.Config
	var binDir string
	if exe, err := os.Executable(); err == nil {
		binDir = filepath.Dir(exe)
	}
	l.String(&o.BinDir, "bin", "", binDir, "directory holding the service binaries and embed-sim (make build puts them in bin/)")
	l.Int(&o.Documents, "documents", "", 300, "generated documents to ingest, besides the poison ones")
	l.Bool(&o.Keep, "keep", "", false, "leave everything running after the report, until Ctrl-C, and print its URLs")
	l.Duration(&o.Timeout, "timeout", "", 5*time.Minute, "how long to wait for the system to converge")
	l.Duration(&o.Outage, "outage", "", 8*time.Second, "length of the embedder outage")
	l.Bool(&o.Drill, "drill", "", false, "after convergence, run the fault drill (sluice-dev drill) against the running system")
	l.Bool(&o.Cluster, "cluster", "", false, "run NATS as a 3-node JetStream cluster with R3 streams")
	if err := parse(l, args); err != nil {
		return err
	}
	o.Stdout, o.Stderr = env.Stdout, env.Stderr
	if f, ok := env.Stderr.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		o.Progress = true
	}
	return demo.Run(ctx, o)
}
