// Command dlq-replayer runs the DLQ stream's consumers: triage (the
// dead_letters table), the replayer (re-embeds recoverable dead letters)
// and the alerter (escalations and spikes). --roles picks which.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/sluicehq/sluice/internal/dlq"
	"github.com/sluicehq/sluice/internal/service"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := dlq.Run(ctx, os.Args[1:], os.LookupEnv, os.Stderr)
	stop()
	code := service.ExitCode(err)
	if code != 0 {
		fmt.Fprintln(os.Stderr, "dlq-replayer:", err)
	}
	os.Exit(code)
}
