// Command sluice is the operator CLI: migrations, dead-letter triage and
// replay, reconciliation, runs, index generations, search and the console.
// The demo and the drill are sluice-dev's.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/sluicehq/sluice/internal/ops/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Run(ctx, cli.Env{Stdout: os.Stdout, Stderr: os.Stderr, Stdin: os.Stdin, Lookup: os.LookupEnv}, os.Args[1:])
	stop()
	os.Exit(code)
}
