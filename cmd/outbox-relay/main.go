// Command outbox-relay publishes dead letters from the PostgreSQL outbox
// to the JetStream DLQ stream.
package main

import (
	"github.com/sluicehq/sluice/internal/failure/outboxrelay"
	"github.com/sluicehq/sluice/internal/platform/service"
)

func main() {
	service.Main("outbox-relay", outboxrelay.Run)
}
