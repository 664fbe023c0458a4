// Package testenv provides real infrastructure — a PostgreSQL cluster and a
// NATS JetStream server — to tests, to `sluice demo` and to the benchmarks.
//
// Services are found in this order: explicit URLs (DATABASE_URL, NATS_URL),
// then the machine's own binaries (PostgreSQL's initdb and postgres, and a
// nats-server built from the Go module version pinned in go.mod), then
// testcontainers-go when a Docker engine answers. PostgreSQL comes in two
// backends: the default one above, and PostgreSQL 17 with pgvector
// (PGVECTOR_DATABASE_URL, then a cached Debian root built by `make
// pgvector-root` and started with chroot, then a container); tests choose
// with OnBackend or range over Backends with ForEachBackend. A service that
// cannot be provided is a test failure whose message says how to provide
// it; it is never a silent skip.
//
// NATS servers require a user per role (internal/natsauth), as
// deployments do: NATS.URL carries the topology owner's credentials, for
// tests' own connections, and NATS.URLFor, ConnConfig and Env give a
// service's role; WithTLS adds TLS with client certificates from a CA
// generated for the server. Databases come with URLs for the PostgreSQL
// roles the migrations create (Database.RuntimeURL, ReadonlyURL).
//
// Local servers run as child processes on free loopback ports with their
// data in one temporary root per process. They receive SIGKILL if the
// process that started them dies, and a small watchdog removes the temporary
// root once that process is gone, so nothing is left behind even when a
// test panics. Crash tests use Kill, Restart and StopImmediate to take the
// servers down the hard way and bring them back on the same data.
package testenv
