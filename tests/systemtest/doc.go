// Package systemtest holds end-to-end tests of the whole pipeline: the
// producer, consumers, outbox relay, DLQ consumers and operator commands
// running together against real NATS JetStream and PostgreSQL, with the
// embedding simulator standing in for the model.
package systemtest
