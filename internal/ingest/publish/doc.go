// Package publish publishes owed chunk jobs to INGEST and records, in the
// manifest, that JetStream confirmed each one.
//
// PostgreSQL is the source of truth for owed work (design §7.7): a manifest
// row is pending until a consumer stores or parks it, and its published_at
// stays NULL until a PubAck proves the job is in the stream. Every path
// that publishes a chunk job goes through a Publisher: the producer for a
// new run, the Sweeper in outbox-relay for jobs whose confirmation never
// came (a producer killed mid-run, or run while NATS was down), and
// `sluice reconcile --redrive`. Like every publisher to INGEST (the
// backfill's planner, operator replays) it publishes through
// pkg/puback's Sender, which reads the PubAcks.
//
// A republish cannot be fooled by the duplicate window. A PubAck marked
// duplicate names the sequence of the first copy; the Sender checks that
// the stream still holds that sequence, and if the message is gone while
// the chunk is still pending, the Publisher publishes it again under the
// next publish generation, recorded in the manifest: a Nats-Msg-Id the
// window has never seen.
package publish
