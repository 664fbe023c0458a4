// Command embed-sim serves an OpenAI-compatible embedding API with scripted
// faults, for demos, drills and benchmarks. See package embedsim.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "embed-sim:", err)
		os.Exit(exitCode(err))
	}
}
