// Package deploytest checks the deployment files against the code they
// deploy: docker-compose.yml and its cluster override as Compose's own
// loader reads them, and the Prometheus rules, scrape configuration and
// Grafana dashboard.
//
// As long as its tests pass: every setting a service is given is one its
// binary reads, and none it needs is left at a loopback default; each
// service listens, is health-checked and is scraped on one port; services
// connect with their own least privileges; every NATS node starts, and in
// a cluster every client reaches every node; every metric an alert or a
// panel queries is one the Go code defines, with the labels it matches on;
// and promtool evaluates every alert firing and silent. TestDeploy, with
// SLUICE_TEST_DEPLOY=1 (make test-deploy), runs the stack on Docker.
package deploytest
