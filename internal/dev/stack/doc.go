// Package stack is `sluice-dev up` and `sluice-dev down`: PostgreSQL,
// NATS JetStream and every long-running service on this machine, kept in
// one data directory, for embedding a user's own documents without
// Docker.
//
// Unlike the demo's throwaway environment, a stack persists: its
// database, its streams, its ports and its NATS passwords live in the
// directory, so a second `up` on the same directory serves the same index.
// The processes are detached and outlive the command that started them;
// `down` stops them. Each service runs as its own PostgreSQL role and NATS
// user, and `up` writes, per binary, the environment that carries its
// credentials.
package stack
