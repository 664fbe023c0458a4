// Command outbox-relay publishes dead letters from the PostgreSQL outbox
// to the JetStream DLQ stream.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/sluicehq/sluice/internal/relay"
	"github.com/sluicehq/sluice/internal/service"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := relay.Run(ctx, os.Args[1:], os.LookupEnv, os.Stderr)
	stop()
	code := service.ExitCode(err)
	if code != 0 {
		fmt.Fprintln(os.Stderr, "outbox-relay:", err)
	}
	os.Exit(code)
}
