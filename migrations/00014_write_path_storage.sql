-- Storage settings for the write path, chosen from profiles of make bench.
--
-- chunk_embeddings: a row is a vector of a few KiB and its text, over the
-- 2 KiB at which PostgreSQL compresses a row's values. Its default
-- compressor, pglz, was a tenth of PostgreSQL's CPU in the pipeline, most
-- of it spent failing to compress vectors of random-looking floats. lz4
-- gives up on those at once and compresses text several times faster.
-- Measured on the bench corpus: 2,132 bytes a chunk with lz4, 1,593 with
-- pglz, 2,816 with no compression at all. A server built without lz4
-- keeps pglz.
--
-- documents: completion rewrites status, live_version and updated_at,
-- none of them indexed. Room left on each page lets most of those updates
-- stay on the page (HOT), adding no entries to the document indexes: the
-- completion statement touched 16% fewer buffers and wrote a third less
-- WAL.

-- +goose Up
-- +goose StatementBegin
DO $$
BEGIN
    ALTER TABLE chunk_embeddings ALTER COLUMN text SET COMPRESSION lz4, ALTER COLUMN embedding SET COMPRESSION lz4;
    ALTER TABLE chunk_embeddings_previous ALTER COLUMN text SET COMPRESSION lz4, ALTER COLUMN embedding SET COMPRESSION lz4;
EXCEPTION WHEN feature_not_supported THEN
    RAISE NOTICE 'this server has no lz4: chunk_embeddings keeps pglz';
END
$$;
-- +goose StatementEnd
ALTER TABLE documents SET (fillfactor = 70);

-- +goose Down
ALTER TABLE documents RESET (fillfactor);
ALTER TABLE chunk_embeddings_previous ALTER COLUMN text SET COMPRESSION default, ALTER COLUMN embedding SET COMPRESSION default;
ALTER TABLE chunk_embeddings ALTER COLUMN text SET COMPRESSION default, ALTER COLUMN embedding SET COMPRESSION default;
