// Package outboxrelay is the outbox-relay service: it publishes the outbox's
// dead letters to the DLQ stream (see pkg/outbox.Relay).
package outboxrelay
