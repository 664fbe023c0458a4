// Command consumer pulls chunk jobs from JetStream, embeds them and stores
// the vectors in PostgreSQL, parking what cannot be stored.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/sluicehq/sluice/internal/consumer"
	"github.com/sluicehq/sluice/internal/service"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := consumer.Run(ctx, os.Args[1:], os.LookupEnv, os.Stderr)
	stop()
	code := service.ExitCode(err)
	if code != 0 {
		fmt.Fprintln(os.Stderr, "consumer:", err)
	}
	os.Exit(code)
}
