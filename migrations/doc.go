// Package migrations holds Sluice's schema migrations, embedded in every
// binary that needs them, and applies them with goose.
//
// Migration 1 creates the core tables of design §5. Migration 2 creates
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
// Migration 27 lets it build and remove a later generation's
// nearest-neighbour index (a partial HNSW index on the embedding cast to
// the generation's dimension) through the owner's SECURITY DEFINER
// functions build_generation_index and drop_generation_index, which take
// the generation's number alone, audits a build, and lets sluice_console
// read the registry and the keys (never the text) of every generation's
// vectors for its overview.
//
// Migration 28 keeps later generations complete: the queue of chunks a
// later generation is owed (generation_backfill_queue, written by every
// store transaction and by the backfill's scan), the scan's cursor
// (generation_backfill) and the chunks a generation parked
// (generation_parked), none holding text. Consumers run the backfill:
// they read the registry, write later generations' vectors and, through
// the owner's lock_generation_for_write and mark_generation_ready,
// share-lock a generation while writing it and move a complete building
// generation to ready (audited), and nothing else of the registry. The
// operator clears a generation's parked chunks (sluice index retry).
//
// Migration 29 is bulk mode's ledger (bulk_batches, bulk_members): chunk
// jobs held in PostgreSQL while the provider's Batch API embeds them.
// The consumer admits, builds, polls and applies; the operator reads and
// cancels a source's batches; the console reads the batches' counts; the
// erasing roles delete a deleted document's members, whose text is
// otherwise kept only while they are pending.
//
// Migration 26 adds text_hash, the SHA-256 of a vector's text, to every
// table of vectors, fills it for the rows already stored and indexes it:
// the key on which the pipeline reuses a stored vector instead of paying
// the provider for the same text again. The roles that reuse vectors
// (sluice_consumer, sluice_replayer) read those tables whole already.
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
