// Command producer reads a corpus, records its documents and chunks in
// PostgreSQL and publishes the chunk jobs to JetStream.
//
// Exit status: 0 when every document was recorded and every job published
// (unreadable documents are recorded and parked, and counted in the
// summary), 1 on an error (what was recorded stays recorded; re-run to
// continue), 2 for a usage mistake, 130 when interrupted.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/sluicehq/sluice/internal/ingest/producer"
	"github.com/sluicehq/sluice/internal/platform/service"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := producer.Run(ctx, os.Args[1:], os.LookupEnv, os.Stdin, os.Stdout, os.Stderr)
	interrupted := ctx.Err() != nil
	stop()
	code := service.ExitCode(err)
	if err != nil && interrupted {
		// Interrupted mid-run: not a success, even though the services
		// treat a cancelled context as a clean stop.
		code = 130
	}
	if code != 0 {
		fmt.Fprintln(os.Stderr, "producer:", err)
	}
	os.Exit(code)
}
