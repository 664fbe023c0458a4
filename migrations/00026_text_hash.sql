-- Reusing vectors (issue 30, item 4): never pay the provider twice for
-- the same text. Within one index generation a chunk's vector depends on
-- exactly the text sent to the provider, its model and its dimension;
-- content_hash covers the metadata too, so it cannot find the vector of
-- the same text under other metadata (another document, a moved chunk).
-- text_hash is the SHA-256 of the text's UTF-8 bytes, on every table that
-- holds vectors, written by the store's upsert in the same statement as
-- the text (pkg/vectorstore), and filled here for the rows already
-- stored.
--
-- The backfill runs before the indexes exist, so that its updates can be
-- heap-only and leave the TOASTed vectors and texts where they are. A row
-- whose text_hash is NULL (written by something other than the store) is
-- simply never reused.
--
-- Grants: the roles that read vectors to reuse them (sluice_consumer and
-- sluice_replayer, through the pipeline) hold SELECT on the whole of
-- chunk_embeddings and chunk_embeddings_previous already (migration 20),
-- which covers the new column; the roles granted columns one by one
-- (sluice_producer, sluice_console) get nothing new. Later generations'
-- rows are read by nobody but the operator until their backfill exists.

-- +goose Up
ALTER TABLE chunk_embeddings ADD COLUMN text_hash bytea;
ALTER TABLE chunk_embeddings_previous ADD COLUMN text_hash bytea;
ALTER TABLE generation_embeddings ADD COLUMN text_hash bytea;

UPDATE chunk_embeddings SET text_hash = sha256(convert_to(text, 'UTF8')) WHERE text_hash IS NULL;
UPDATE chunk_embeddings_previous SET text_hash = sha256(convert_to(text, 'UTF8')) WHERE text_hash IS NULL;
UPDATE generation_embeddings SET text_hash = sha256(convert_to(text, 'UTF8')) WHERE text_hash IS NULL;

CREATE INDEX chunk_embeddings_text_hash ON chunk_embeddings (text_hash);
CREATE INDEX chunk_embeddings_previous_text_hash ON chunk_embeddings_previous (text_hash);
CREATE INDEX generation_embeddings_text_hash ON generation_embeddings (generation, text_hash);

-- +goose Down
ALTER TABLE generation_embeddings DROP COLUMN text_hash;
ALTER TABLE chunk_embeddings_previous DROP COLUMN text_hash;
ALTER TABLE chunk_embeddings DROP COLUMN text_hash;
