// Command consumer pulls chunk jobs from JetStream, embeds them and stores
// the vectors in PostgreSQL, parking what cannot be stored.
package main

import (
	"github.com/sluicehq/sluice/internal/ingest/consumer"
	"github.com/sluicehq/sluice/internal/platform/service"
)

func main() {
	service.Main("consumer", consumer.Run)
}
