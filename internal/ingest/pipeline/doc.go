// Package pipeline turns chunk jobs into stored vectors or dead letters.
// It is the one code path shared by the consumer (jobs from JetStream) and
// the replayer (jobs from the DLQ): decode, drop stale work, enforce the
// delivery cap, apply the compliance stage before any text leaves the process,
// reuse the vectors the store already holds for the batch's texts (one
// lookup a batch, same generation, model and dimension) and send each
// other text once, embed in bounded sub-batches (bisecting a batch
// rejected for one bad input), and store each batch in one transaction.
// A reused vector is stored exactly as an embedded one is.
//
// Process decides an Outcome for every job and commits everything it
// decided before returning: vectors and manifest rows in the store
// transaction, failures in a separate park transaction that writes the
// dead letter to the outbox. The caller acknowledges messages only after
// Process returns, so a crash anywhere leaves each job either redelivered
// or already recorded — never lost.
package pipeline
