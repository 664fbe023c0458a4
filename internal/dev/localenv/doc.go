// Package localenv runs throwaway PostgreSQL and NATS JetStream servers,
// and any other child process, on this machine: for `sluice-dev demo`, the
// benchmarks and, through internal/dev/testenv, the tests.
//
// PostgreSQL comes from the machine's own binaries (initdb and postgres on
// PATH or under /usr/lib/postgresql), or, with pgvector, from the cached
// Debian root that `make pgvector-root` builds, started with chroot.
// nats-server is built from the Go module version pinned in go.mod, or
// taken from NATS_SERVER_BIN; a 3-node JetStream cluster is three of them.
// A server that cannot be started is an error naming what is missing and
// how to provide it. The package links no test or container code, so
// production binaries may use it.
//
// Servers run as child processes (Process) on free loopback ports with
// their data in one temporary root per Env. They receive SIGKILL if the
// process that started them dies, and a small watchdog removes the
// temporary root once that process is gone, so nothing is left behind even
// after a panic. Crash tests use Kill, Restart and StopImmediate to take
// the servers down the hard way and bring them back on the same data.
package localenv
