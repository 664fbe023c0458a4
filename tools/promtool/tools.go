//go:build tools

// Package promtool pins the Prometheus module whose promtool checks and
// unit-tests deploy/prometheus/alerts.yml. It is a module of its own so
// that Prometheus's dependencies stay out of Sluice's go.mod.
package promtool

import _ "github.com/prometheus/prometheus/cmd/promtool"
