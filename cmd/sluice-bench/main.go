// Command sluice-bench measures the ingest pipeline against its physical
// ceiling, a naive build and a River-based peer, in one invocation on one
// machine. See package bench.
//
// Exit status: 0 when every run completed (whether or not targets were
// met: they are reported, never asserted), 1 when a run failed, 2 for a
// usage mistake.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/sluicehq/sluice/internal/dev/bench"
)

func main() {
	// The naive workers and the profiled consumer are this binary again.
	if code, ok := bench.RunChild(); ok {
		os.Exit(code)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := bench.Main(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		os.Exit(0)
	case errors.Is(err, bench.ErrUsage):
		fmt.Fprintln(os.Stderr, "sluice-bench:", err)
		os.Exit(2)
	default:
		fmt.Fprintln(os.Stderr, "sluice-bench:", err)
		os.Exit(1)
	}
}
