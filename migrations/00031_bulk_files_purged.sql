-- The provider keeps a batch's files (its request file, holding every
-- member's text, and its output and error files) until they are deleted
-- or expire there. Once a batch settles the ledger needs none of them:
-- the poller deletes them at the provider and records when in
-- files_purged_at (issue 33), so chunk text does not outlive its batch
-- anywhere but in the vector store.

-- +goose Up
ALTER TABLE bulk_batches ADD COLUMN files_purged_at timestamptz;
-- The poller finds the settled batches whose files are still at the
-- provider by this index.
CREATE INDEX bulk_batches_unpurged ON bulk_batches (batch_id)
    WHERE files_purged_at IS NULL AND state IN ('applied', 'requeued');

-- +goose Down
DROP INDEX bulk_batches_unpurged;
ALTER TABLE bulk_batches DROP COLUMN files_purged_at;
