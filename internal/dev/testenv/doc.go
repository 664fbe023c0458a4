// Package testenv provides real infrastructure — a PostgreSQL cluster and a
// NATS JetStream server — to tests, through testing.TB helpers.
//
// Services are found in this order: explicit URLs (DATABASE_URL, NATS_URL),
// then local servers that internal/dev/localenv starts from the machine's own
// binaries (PostgreSQL's initdb and postgres, and a nats-server built from
// the Go module version pinned in go.mod), then testcontainers-go when a
// Docker engine answers. PostgreSQL comes in two backends: the default one
// above, and PostgreSQL 17 with pgvector (PGVECTOR_DATABASE_URL, then the
// cached Debian root built by `make pgvector-root` and started with
// chroot, then a container); tests choose with OnBackend or range over
// Backends with ForEachBackend. A service that cannot be provided is a
// test failure whose message says how to provide it; it is never a silent
// skip.
//
// NATS servers require a user per role (internal/platform/natsauth), as
// deployments do: NATS.URL carries the topology owner's credentials, for
// tests' own connections, and NATS.URLFor, ConnConfig and Env give a
// service's role; WithTLS adds TLS with client certificates from a CA
// generated for the server. Databases come with URLs for the PostgreSQL
// role the migrations create (Database.RoleURL), one per service.
//
// Local servers die with the test binary and leave no files behind (see
// internal/dev/localenv). Crash tests use Kill, Restart and StopImmediate to
// take them down the hard way and bring them back on the same data.
// Eventually is the bounded poll tests wait with, and Buffer the writer
// they share between a child's output and their assertions.
package testenv
