// Package broker connects to NATS and declares Sluice's JetStream topology
// (DESIGN §4): the INGEST work queue with its durables "workers" and
// "replay", and the DLQ stream whose durables "triage", "replayer" and
// "alerter" each see every dead letter. Declaring is idempotent and every
// service does it at startup, so no service depends on another having run.
package broker
