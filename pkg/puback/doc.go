// Package puback publishes a batch of messages to one JetStream stream
// and reads their PubAcks: the one place where Sluice decides that a
// message is in a stream. Every publisher to INGEST (the first publish of
// chunk jobs, the owed-work sweeper, the backfill, operator replays) and
// the outbox relay to DLQ go through a Sender.
//
// What it guarantees:
//
//   - Every message gets an Ack, in the order given: its stream sequence,
//     or the error that kept it out (a refusal, a PubAck that never came,
//     ctx ending first).
//   - A deduplicated PubAck is success only while the first copy it names
//     is still in the stream. JetStream answers a Nats-Msg-Id it saw
//     within the duplicate window with the first copy's sequence, even
//     when that copy was since acknowledged out of a work queue, purged,
//     deleted or lost with a recreated stream; such an Ack carries an
//     error matching ErrGone, and the caller decides what to do: publish
//     it again under a new Nats-Msg-Id (RepublishGone), or leave it owed.
//   - The check reads the stream's state, never a message, so a publisher
//     needs no right to read messages back.
package puback
