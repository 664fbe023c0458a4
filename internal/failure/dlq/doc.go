// Package dlq holds the consumers of the DLQ stream. Each is its own
// durable and sees every dead letter: triage keeps the dead_letters table
// for humans, the replayer re-drives recoverable dead letters through the
// ingest pipeline, and the alerter escalates compliance failures and
// spikes. They run together in cmd/dlq-replayer, each optional.
package dlq
