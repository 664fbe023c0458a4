// Command dlq-replayer runs the DLQ stream's consumers: triage (the
// dead_letters table), the replayer (re-embeds recoverable dead letters)
// and the alerter (escalations and spikes). --roles picks which.
package main

import (
	"github.com/sluicehq/sluice/internal/failure/dlq"
	"github.com/sluicehq/sluice/internal/platform/service"
)

func main() {
	service.Main("dlq-replayer", dlq.Run)
}
