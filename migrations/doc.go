// Package migrations holds Sluice's schema migrations, embedded in every
// binary that needs them, and applies them with goose.
//
// Migration 1 creates the core tables of DESIGN §5. Migration 2 creates
// chunk_embeddings, whose embedding column is pgvector's vector(N) where the
// extension is available and real[] with a CHECK on its length otherwise;
// N comes from Options.Dims and is recorded in sluice_settings so services
// can refuse to start with a different EMBEDDING_DIMS.
//
// Applying the migrations twice is a no-op.
package migrations
