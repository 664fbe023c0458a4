-- Blue/green re-indexing (seed 003): a document's previous version stays
-- searchable until every chunk of its new version is stored.
-- documents.live_version is the version search serves while a newer one
-- is being indexed; chunk_embeddings_previous holds the rows of that
-- version that the new one's chunks have already replaced in
-- chunk_embeddings. Both are cleared when the new version completes.

-- +goose Up
ALTER TABLE documents ADD COLUMN live_version bigint;
UPDATE documents SET live_version = version WHERE status = 'ready';
CREATE TABLE chunk_embeddings_previous (LIKE chunk_embeddings INCLUDING ALL);

-- +goose Down
DROP TABLE chunk_embeddings_previous;
ALTER TABLE documents DROP COLUMN live_version;
