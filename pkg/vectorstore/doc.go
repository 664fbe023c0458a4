// Package vectorstore writes chunk embeddings to PostgreSQL and searches
// them. It owns the chunk_embeddings table of design §5, the retained rows
// of chunk_embeddings_previous and the later index generations' vectors in
// generation_embeddings, and nothing else:
// documents and ingest_manifest belong to the pipeline, which runs the
// store's statements inside its own transaction (see DB) so that a chunk's
// vector and its manifest row commit together or not at all.
//
// # Guarantees
//
// Upsert is idempotent and ordered by document version: one row per
// (doc_id, chunk_index); a record older than the stored row never overwrites
// it (Stale); a record with the stored version and content hash changes
// nothing, not even updated_at (Unchanged). Replaying any batch any number of
// times therefore converges to the same table, which is what design §7's
// "no duplicate" invariant rests on.
//
// Upsert validates every record before it touches the database, so bad data
// (a wrong dimension, NaN or ±Inf, text PostgreSQL would refuse) is reported
// as a *RecordError naming the one record to park, carrying a permanent
// classify error, instead of a database error that would fail the whole
// batch. A database error is returned wrapped with %w so that
// classify.Classify can read its SQLSTATE.
//
// Upsert costs one statement per batch (two only when a concurrent writer
// committed the same chunk while the statement ran): every column travels as
// one array parameter and all vectors as a single binary float4[] sliced per
// row in SQL, never as text literals (design §9).
//
// # Vector column
//
// Migration 2 stores embeddings as pgvector's vector(N) when the server has
// the extension and as real[] with a length CHECK otherwise; Open reads which
// from sluice_settings. Both modes accept the same records and rank search
// results by cosine similarity; under pgvector the ranking is done by the
// <=> operator (and so can use an index), under real[] by plain SQL, which is
// exact but scans every candidate row.
//
// # Index generations
//
// Generation 1 is chunk_embeddings, whose contract is unchanged; every
// later generation's vectors live in generation_embeddings, keyed by
// generation, whatever their dimension (migration 25). OpenGeneration
// returns a store bound to one generation, with the same version-guarded
// Upsert, Search and PruneVersion on that generation's rows only, and
// nothing else's. EraseDocuments erases a document from every generation
// in one statement per table, so an erasure cannot miss a generation;
// DropGeneration removes a later generation's vectors. Which generation
// is active is the registry's (internal/store/generation), not the store's.
//
// # Reusing vectors
//
// Upsert stores, beside every vector, the SHA-256 of its text
// (text_hash, migration 26; see TextHash), computed in the statement that
// writes the text so that the two cannot disagree. Reusable returns, in
// one statement for a whole batch, the vectors a store's generation
// already holds for texts, made by a given model at the store's
// dimension: a text is then embedded once per generation, however many
// chunks hold it. A row rewritten with another text no longer answers for
// the old one, and an erased document's rows are gone.
//
// # Conformance
//
// Every Store implementation must pass storetest.Run.
package vectorstore
