// Package retention applies the retention of everything Sluice keeps
// about failed chunks, on a schedule, with no operator action.
//
// A Purger runs Steps, one per table. Each step's statement belongs to the
// package that owns its table (deadletter for dead_letters, dead_letter_payloads
// and dead_letter_history; manifest for ingest_manifest and
// escalated_chunks) and removes at most a batch of rows per call, so a
// large first purge never holds locks for long; the Purger calls it again
// until a batch comes back short. Every step of one pass judges age
// against the same instant, read from an injected clock, and steps run in
// the order given, so a step may rely on what an earlier one purged.
//
// What may go, and when (the statements' doc comments hold the detail):
//   - dead_letters.payload: past its source's dead_letter_payloads
//     retention after its last failure, an escalation's past
//     ESCALATION_RETENTION; the rest of the row stays.
//   - dead_letter_payloads (payloads too large for the DLQ stream): past
//     the default dead_letter_payloads retention, the DLQ stream's age;
//     never while the relay still owes its message, and never while it is
//     the current payload of an open dead letter that keeps its own; and
//     with its dead letter's payload once retention purged that.
//   - ingest_manifest.job of a parked chunk: once its dead letter's
//     payload is purged or the dead letter is resolved. Pending jobs are
//     owed work and are never purged.
//   - dead_letter_history: past its source's dead_letter_history
//     retention, an escalation's past ESCALATION_RETENTION.
//   - escalated_chunks: past its source's ESCALATION_RETENTION, which the
//     policy never lets fall below RETENTION_MANDATE.
//
// Purges are idempotent and safe to run from several replicas at once.
package retention
