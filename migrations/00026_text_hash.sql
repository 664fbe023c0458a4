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
-- The migration runs outside a transaction, so that a large table stays
-- usable while it runs: adding the nullable column takes its lock for an
-- instant; the backfill updates the rows a thousand pages at a time, each
-- range committed on its own (a TID range scan, so the whole pass reads
-- the table once); and the indexes are built CONCURRENTLY, blocking no
-- writes. Run again after an interruption, it picks up where it stopped.
-- A row whose text_hash is NULL (written by something other than the
-- store) is simply never reused.
--
-- Grants: the roles that read vectors to reuse them (sluice_consumer and
-- sluice_replayer, through the pipeline) hold SELECT on the whole of
-- chunk_embeddings and chunk_embeddings_previous already (migration 20),
-- which covers the new column; the roles granted columns one by one
-- (sluice_producer, sluice_console) get nothing new. Later generations'
-- rows are read by nobody but the operator until their backfill exists.

-- +goose NO TRANSACTION

-- +goose Up
ALTER TABLE chunk_embeddings ADD COLUMN IF NOT EXISTS text_hash bytea;
ALTER TABLE chunk_embeddings_previous ADD COLUMN IF NOT EXISTS text_hash bytea;
ALTER TABLE generation_embeddings ADD COLUMN IF NOT EXISTS text_hash bytea;

-- +goose StatementBegin
DO $$
DECLARE
    tbl   regclass;
    pages bigint;
    step  constant bigint := 1000;
    page  bigint;
BEGIN
    FOREACH tbl IN ARRAY ARRAY['chunk_embeddings', 'chunk_embeddings_previous', 'generation_embeddings']::regclass[] LOOP
        pages := pg_relation_size(tbl) / current_setting('block_size')::bigint;
        page := 0;
        WHILE page < pages LOOP
            EXECUTE format('UPDATE %s SET text_hash = sha256(convert_to(text, ''UTF8''))
                            WHERE ctid >= $1::tid AND ctid < $2::tid AND text_hash IS NULL', tbl)
                USING format('(%s,0)', page), format('(%s,0)', page + step);
            COMMIT;
            page := page + step;
        END LOOP;
    END LOOP;
END $$;
-- +goose StatementEnd

CREATE INDEX CONCURRENTLY IF NOT EXISTS chunk_embeddings_text_hash ON chunk_embeddings (text_hash);
CREATE INDEX CONCURRENTLY IF NOT EXISTS chunk_embeddings_previous_text_hash ON chunk_embeddings_previous (text_hash);
CREATE INDEX CONCURRENTLY IF NOT EXISTS generation_embeddings_text_hash ON generation_embeddings (generation, text_hash);

-- +goose Down
ALTER TABLE generation_embeddings DROP COLUMN text_hash;
ALTER TABLE chunk_embeddings_previous DROP COLUMN text_hash;
ALTER TABLE chunk_embeddings DROP COLUMN text_hash;
