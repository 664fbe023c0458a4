// Package telemetry gives every service the same logger, metrics registry
// and operational HTTP endpoints: /metrics for Prometheus, /healthz (the
// process is alive) and /readyz (its dependencies answer).
package telemetry
