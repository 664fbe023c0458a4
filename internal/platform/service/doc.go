// Package service is what every Sluice service does at startup and
// shutdown: build the logger and metrics registry, connect to PostgreSQL
// and NATS, declare the JetStream topology, and serve /metrics, /healthz
// and /readyz until the context ends.
package service
