// Package reconcile proves design §7 from the database and the broker: no
// silent drop (every manifest row stored with a vector, parked with a dead
// letter, or pending with a message in INGEST to deliver it), no
// duplicate, nothing stranded, no stored chunk with an open dead letter,
// no deleted document with data left in any index generation,
// exactly one active generation (each generation reported), no fleet
// budget overdrawn and no claim on a text left for an hour. With Redrive
// it repairs what it finds, from PostgreSQL alone,
// even when the INGEST stream is gone, and goes on past a failed repair,
// reporting it.
//
// Run reports what it found in its Report; an error from Run means the
// check could not be made, never that something leaked (`sluice
// reconcile` exits 2 on it, 1 on a problem found). Run reads JetStream
// through the JetStream it is given: the CLI gives it one whose reads wait
// through a settling cluster (broker.Settle, bounded by --settle-timeout).
//
// It is meant for a quiet system: work in flight can look owed or
// stranded for as long as it is in flight.
package reconcile
