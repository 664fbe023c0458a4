-- Storage settings for the write path, chosen from profiles of make bench.
--
-- chunk_embeddings: a row is a vector of a few KiB and its text. By default
-- PostgreSQL tries to compress and move out of line every row over about
-- 2 KiB: it spent a tenth of its CPU compressing (pglz) and moved the
-- vector, which search reads for every candidate, into TOAST. Rows stay
-- whole up to a page now; larger ones are still toasted. The upsert
-- ceiling of make bench used a quarter less CPU per row.
--
-- documents: completion rewrites status, live_version and updated_at,
-- none of them indexed. Room left on each page lets most of those updates
-- stay on the page (HOT), adding no entries to the document indexes: the
-- completion statement touched 16% fewer buffers and wrote a third less
-- WAL.

-- +goose Up
ALTER TABLE chunk_embeddings SET (toast_tuple_target = 8160);
ALTER TABLE chunk_embeddings_previous SET (toast_tuple_target = 8160);
ALTER TABLE documents SET (fillfactor = 70);

-- +goose Down
ALTER TABLE documents RESET (fillfactor);
ALTER TABLE chunk_embeddings_previous RESET (toast_tuple_target);
ALTER TABLE chunk_embeddings RESET (toast_tuple_target);
