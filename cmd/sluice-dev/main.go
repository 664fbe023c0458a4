// Command sluice-dev is the development command: `sluice-dev demo` runs
// the whole system on this machine, `sluice-dev drill` runs the
// classification drill against a running system. It is not part of the
// product image. See package devcli.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/sluicehq/sluice/internal/dev/devcli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := devcli.Run(ctx, devcli.Env{Stdout: os.Stdout, Stderr: os.Stderr, Lookup: os.LookupEnv}, os.Args[1:])
	stop()
	os.Exit(code)
}
