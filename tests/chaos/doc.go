// Package chaos proves that every chunk converges with no operator action
// while faults land on work in flight (design §7.3, §7.7). Its tests run
// every service as a real process, with the settings a deployment uses
// (metrics on), against a real nats-server and PostgreSQL that they kill,
// stop and restart, and an embed-sim they kill, slow down and hang.
//
// The short tests run in `make test`. The long scenarios (the cluster,
// power loss, network faults, a fleet sharing one quota, model and
// chunking changes under load, deletes under outages, a provider that
// answers in 45 s) are in files built
// only with -tags chaos, which `make chaos` sets. It also runs TestChaos
// for longer (-chaos.duration), with random kill -9 of every service, the
// producer included, a nats-server kill, PostgreSQL outages and embedder
// outages, hangs and 429s, then asserts with no operator action: nothing
// pending, INGEST empty, 0 lost, 0 duplicated, every stored vector the
// embedder's vector for its chunk's own text, and `sluice reconcile`
// exiting 0.
package chaos
