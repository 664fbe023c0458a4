// Package deploytest checks the deployment files against the code they
// deploy, without Docker: docker-compose.yml, the Dockerfile, the
// Prometheus configuration and alert rules, and the Grafana provisioning
// and dashboard.
//
// What it guarantees, as long as its tests pass: every environment
// variable and flag a compose service is given is one its binary reads
// (internal/catalog, the sluice CLI's own usage, embed-sim's flag set), so a
// typo cannot silently fall back to a default; the services start in
// dependency order; every metric an alert or a dashboard panel queries is
// one the Go code defines, with the labels it matches on; and the ports
// the healthchecks, METRICS_ADDR and the Prometheus scrape configuration
// name agree.
//
// The package holds tests only. Each check is a function that returns the
// problems it finds, so that the tests can also prove, on mutated copies
// of the files, that every check fails when it should.
package deploytest
