// Package storetest is the conformance suite every vectorstore.Store must
// pass. It drives the store through the behaviour the pipeline depends on —
// idempotent, version-ordered upserts that report an outcome per record,
// validation before any write, one statement per batch, pruning, search
// limited to ready documents at their current version, and transactional
// writes — against a real PostgreSQL database, reading the tables back
// directly rather than trusting the store's own answers. RunWith runs it
// on a store whose rows are elsewhere than chunk_embeddings, such as an
// index generation's in generation_embeddings, or that keeps no served
// version aside.
package storetest
