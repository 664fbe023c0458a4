// Package migrations holds Sluice's schema migrations, embedded in every
// binary that needs them, and applies them with goose.
//
// Migration 1 creates the core tables of DESIGN §5. Migration 2 creates
// chunk_embeddings, whose embedding column is pgvector's vector(N) where the
// extension is available and real[] with a CHECK on its length otherwise;
// N comes from Options.Dims and is recorded in sluice_settings so services
// can refuse to start with a different EMBEDDING_DIMS.
//
// Migration 11 creates the roles sluice_runtime (DML only) and
// sluice_readonly (SELECT on all but escalated_chunks), once per cluster and
// safely when several databases migrate at once, and grants them. A later
// migration needs no GRANT of its own: the default privileges migration 11
// sets give every table and sequence the schema owner creates afterwards to
// sluice_runtime (DML, sequence usage) and sluice_readonly (SELECT), as long
// as migrations keep running as that owner (MIGRATE_DATABASE_URL). A new
// table that holds secret text must REVOKE SELECT from sluice_readonly, as
// 00011 does for escalated_chunks; a table the runtime role must only read
// must REVOKE INSERT, UPDATE, DELETE from sluice_runtime.
//
// Applying the migrations twice is a no-op.
package migrations
