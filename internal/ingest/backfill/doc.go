// Package backfill keeps every index generation after the first
// complete: it publishes the chunks a generation owes to INGEST, on
// ingest.backfill.<source>, and writes them from the backfill durable
// through the pipeline (pipeline.Pipeline.Backfill), bound to the
// generation's model, dimension and vectors.
//
// What it guarantees:
//
//   - Every chunk stored in generation 1 reaches every later generation
//     that is not dropped, or is parked there. The store transaction
//     queues it (generation.Enqueue) with its first vector; a new
//     generation's scan queues what was stored before it existed, page
//     by page from a cursor committed with each page; and once a pass has
//     ended, with nothing queued or in flight, another pass starts while
//     anything stored is still owed. Each step commits before the next,
//     so a consumer killed at any point loses nothing: the next one
//     resumes from PostgreSQL.
//   - A queued chunk is published at least once: a page is deleted from
//     the queue in the transaction that follows its PubAcks, read by
//     pkg/puback. A second publish within the dedupe window is dropped by
//     JetStream while the first copy is still in INGEST, and sent again
//     under a new id when it is gone; a later one changes nothing (the
//     version guard, and reuse of the vector just stored).
//   - Live work keeps priority: the backfill has its own subject and
//     durable, at most Backlog of its messages are outstanding at once,
//     and one pull loop (BACKFILL_WORKERS) takes them, so fresh
//     documents wait behind at most one backfill batch per loop at the
//     provider, under the same fleet budget.
//   - A building generation whose pass ended with nothing owed or parked
//     becomes ready (generation.MarkReady, audited); activation is still
//     the operator's.
package backfill
