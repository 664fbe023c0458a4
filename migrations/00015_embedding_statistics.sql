-- No planner statistics on the vector column.
--
-- No query filters or joins on embedding: search orders by distance
-- through the HNSW index, whatever the column's statistics say. Yet
-- ANALYZE sampled 30,000 vectors of chunk_embeddings and computed a
-- histogram and most-common values over them (per element, for real[]),
-- which made each automatic analyze of the table cost about 1.3 s of
-- CPU in the 1,000,000-chunk bench run, 10 s in all. With a statistics
-- target of 0 the column is skipped: ANALYZE of 100,000 rows took 0.3 s
-- instead of 1.9.

-- +goose Up
ALTER TABLE chunk_embeddings ALTER COLUMN embedding SET STATISTICS 0;
ALTER TABLE chunk_embeddings_previous ALTER COLUMN embedding SET STATISTICS 0;

-- +goose Down
ALTER TABLE chunk_embeddings_previous ALTER COLUMN embedding SET STATISTICS -1;
ALTER TABLE chunk_embeddings ALTER COLUMN embedding SET STATISTICS -1;
