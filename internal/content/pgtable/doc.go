// Package pgtable reads a PostgreSQL table of the application's own
// database as a source of documents, kept in step by triggers.
//
// Install puts, in the application database, a queue
// (sluice_sync.queue, one for every table source, keyed by source) and
// triggers on the table: every inserted, updated or deleted row queues
// its key, a primary-key change queues the old key and the new one, and
// TRUNCATE queues a full reload. The triggers run in the changing
// transaction, so an aborted transaction queues nothing and a committed
// one queues its keys with its rows; no replication slot is involved and
// nothing grows while Sluice is away but the queue itself.
//
// A Batch is one drain of the queue: it opens a REPEATABLE READ
// transaction, takes the source's queued keys (each key once, however
// many times it changed) and yields, for each, the row as it is in the
// snapshot, or a tombstone when it is gone or no longer matches the
// filter. A full reload (the first load, or after TRUNCATE) yields every
// row of the snapshot instead. Ack deletes, in the same transaction, only
// the queue rows the snapshot saw: a change committed after the snapshot
// stays queued for the next drain, which applies it after the snapshot.
// A batch that is never acknowledged (its process killed, its run
// failed) leaves the queue as it was.
package pgtable
