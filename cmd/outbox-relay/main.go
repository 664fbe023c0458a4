// Command outbox-relay publishes dead letters from the PostgreSQL outbox
// to the JetStream DLQ stream.
package main

import (
	"github.com/sluicehq/sluice/internal/relay"
	"github.com/sluicehq/sluice/internal/service"
)

func main() {
	service.Main("outbox-relay", relay.Run)
}
