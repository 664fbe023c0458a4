// Package bench measures the ingest pipeline against its physical ceiling,
// a naive build of the same path and a River-based peer, side by side in
// one invocation on one machine.
//
// Every figure that matters is a ratio between runs of the same invocation:
// the machine is small, shared and noisy, so absolute numbers are reported
// but never asserted. Repetitions are interleaved (rep 1 of every scenario,
// then rep 2, …) so that drift on the machine lands on every scenario alike,
// and throughput is the median of the repetitions.
//
// The package brings up its own PostgreSQL and NATS through localenv,
// migrates a fresh database per run, and runs every service it measures —
// the producer, two consumers, embed-sim, the outbox-relay (for bulk
// mode), the naive workers and the River peer — as separate OS
// processes, so that peak RSS and CPU time are each process's own (wait4
// rusage), not a share of the benchmark's.
//
// The naive workers are part of this package, not a mode of the services:
// they re-execute the benchmark binary with RoleEnv set (see RunChild).
package bench
