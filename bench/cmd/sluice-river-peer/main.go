// Command sluice-river-peer does the ingest pipeline's job on River, for
// sluice-bench to compare against: jobs inserted in bulk, one job per
// chunk, workers that embed through an OpenAI-compatible API and upsert
// with Sluice's own vectorstore. River's retries and discard stand in for
// Sluice's dead-letter path. It prints one JSON object on stdout.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "sluice-river-peer:", err)
		os.Exit(1)
	}
}
