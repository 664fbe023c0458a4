// Package broker connects to NATS and declares Sluice's JetStream topology
// (design §4): the INGEST work queue with its durables "workers" and
// "replay", and the DLQ stream whose durables "triage", "replayer" and
// "alerter" each see every dead letter. Only the topology owner declares
// it (Ensure, run by `sluice nats setup`); services verify it at startup
// (Verify) and wait for it, so that no service needs the right to create,
// change or delete a stream (internal/platform/natsauth).
package broker
