// Package ingest builds the ingest pipeline from its settings: the flags
// and environment both services that run a pipeline register (the
// consumer, for jobs from JetStream, and the DLQ replayer, for dead
// letters), the per-source policy file over them, and the embedder and
// vector store the pipeline writes through. The two services must agree
// on every one of these settings, so they share this one definition.
package ingest
