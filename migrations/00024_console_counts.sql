-- The console shows what is left of a deleted document with the same
-- count sluice docs show makes (internal/erase.Show): it reads which
-- documents retained vectors and by-reference payloads belong to, never
-- their text.

-- +goose Up
GRANT SELECT (doc_id) ON chunk_embeddings_previous, dead_letter_payloads TO sluice_console;

-- +goose Down
REVOKE SELECT (doc_id) ON chunk_embeddings_previous, dead_letter_payloads FROM sluice_console;
