package catalog

import (
	"github.com/sluicehq/sluice/internal/failure/dlq"
	"github.com/sluicehq/sluice/internal/failure/outboxrelay"
	"github.com/sluicehq/sluice/internal/ingest/consumer"
	"github.com/sluicehq/sluice/internal/ingest/producer"
	"github.com/sluicehq/sluice/internal/platform/config"
)

// Settings returns the settings of each long-running service and of the
// producer, keyed by binary name.
func Settings() map[string][]config.Var {
	return map[string][]config.Var{
		"producer":     vars("producer", func(l *config.Loader) { (&producer.ServiceConfig{}).Register(l) }),
		"consumer":     vars("consumer", func(l *config.Loader) { (&consumer.ServiceConfig{}).Register(l) }),
		"outbox-relay": vars("outbox-relay", func(l *config.Loader) { (&outboxrelay.ServiceConfig{}).Register(l) }),
		"dlq-replayer": vars("dlq-replayer", func(l *config.Loader) { (&dlq.ServiceConfig{}).Register(l) }),
	}
}

func vars(name string, register func(*config.Loader)) []config.Var {
	l := config.NewLoader(name, func(string) (string, bool) { return "", false })
	register(l)
	return l.Vars()
}
