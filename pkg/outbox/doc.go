// Package outbox is the transactional outbox between PostgreSQL and the
// JetStream DLQ stream. Write is the only way anything reaches the outbox,
// and it always runs inside the caller's transaction: a dead letter exists
// exactly when the manifest change that parked its chunk committed. The
// relay later publishes each row with Nats-Msg-Id "dl:<id>" (the row's
// msg_id), so a crash between publish and mark cannot publish it twice past
// the stream's dedupe window.
package outbox
