// Package migrations holds Sluice's schema migrations, embedded in every
// binary that needs them, and applies them with goose.
//
// Migration 1 creates the core tables of DESIGN §5. Migration 2 creates
// chunk_embeddings, whose embedding column is pgvector's vector(N) where the
// extension is available and real[] with a CHECK on its length otherwise;
// N comes from Options.Dims and is recorded in sluice_settings so services
// can refuse to start with a different EMBEDDING_DIMS.
//
// Migration 11 created sluice_runtime and sluice_readonly (SELECT on all
// but escalated_chunks), once per cluster and safely when several
// databases migrate at once. Migration 20 gives each service a role of its
// own (Roles, RoleForBinary), granted only what its statements need,
// column by column where it matters, and leaves sluice_runtime nothing.
// Below the schema's owner, no role reads escalated_chunks.text (the
// operator reads one chunk's through reveal_escalated_text, which records
// the read in escalated_text_audit); replay_audit, dead_letter_history and
// escalated_text_audit are append-only, changed only through the owner's
// SECURITY DEFINER functions (record_replay_dispatched,
// purge_dead_letter_history, the history trigger); and the outbox takes
// only well-formed dead letters on their own DLQ subject (outbox_row_ok).
//
// Migration 25 registers index generations (index_generations, exactly
// one active, held by a unique index and a deferred constraint trigger),
// makes what the database held generation 1 (its vectors stay in
// chunk_embeddings), keeps later generations' vectors side by side in
// generation_embeddings (their length tied to the generation's dims by a
// CHECK and a foreign key) and audits every change in the append-only
// index_generation_audit. Only sluice_operator changes generations.
//
// A later migration that creates a table grants each role what its
// statements need, and nothing by default: the default privileges give
// sluice_readonly SELECT on every table the owner creates, and no service
// role anything. A new table that holds secret text must REVOKE SELECT from
// sluice_readonly, as 00011 does for escalated_chunks; a new audit or
// history table grants INSERT and SELECT at most; a new function is
// executable only by the roles granted it.
//
// Applying the migrations twice is a no-op.
package migrations
