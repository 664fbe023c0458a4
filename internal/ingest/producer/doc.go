// Package producer turns a corpus into chunk jobs. For each batch of
// documents it first records the documents and their manifest rows in
// PostgreSQL (status pending), and only then publishes the jobs to
// JetStream with deterministic message ids. A crash between the two leaves
// pending rows that `sluice reconcile --redrive` republishes; a full stream
// makes it wait, never drop. A document whose content is unchanged since
// the last run is skipped; a changed one gets version + 1. Documents that
// cannot be decoded or read are recorded and parked, never skipped. While
// it runs, the producer beats its run's heartbeat; a producer killed
// mid-run leaves a run that ends interrupted once its chunks have
// settled, and the next run of the source publishes the rest.
package producer
