// Package consumer pulls chunk jobs from the INGEST stream in batches,
// hands them to the pipeline and settles each message only after the
// pipeline committed its outcome: Ack for stored or already-done work,
// NakWithDelay for transient failures, Term for parked jobs. While the
// embedder's circuit breaker is open it stops pulling, so an outage does
// not burn deliveries.
package consumer
