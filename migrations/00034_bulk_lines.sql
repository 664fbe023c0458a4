-- Bulk mode pays once per distinct text, names how each batch ended,
-- and leaves no file at the provider (issue 34).
--
-- A request line answers every chunk that shares its text: a member's
-- line_id is the custom_id of the request line it waits on, the same for
-- every member of a batch with the same text ("t" and the text's
-- SHA-256 in hex). A chunk whose text already waits in an unfinished
-- batch of its generation joins that batch's line instead of paying for
-- another; the members of a line take its one answer (a vector, or an
-- error classified as live). Members keep their own text while pending,
-- so a line survives the erasure of any one of its chunks. Rows written
-- before this migration are their own lines (line_id = custom_id).
-- requests and inputs count a batch's lines, members its chunks.
--
-- How a batch ended is kept once it settles: outcome (completed, failed,
-- expired, cancelled, lost: the provider no longer knows it,
-- output_lost: its result files were gone before they were read), the
-- provider's error_code and error_message for a failed batch, and
-- unanswered, the members it did not run (left over when it expired or
-- was cancelled, or absent from its files), handed back as owed work.
--
-- Files: upload_requested_at is set before a request file is uploaded
-- and cleared once the ledger knows every file it may have left at the
-- provider, so that a process killed between the upload and its record
-- leaves a trace the poller follows (it deletes the batch's files that
-- the ledger does not use). input_deleted_at is when the input file of a
-- batch still running was deleted because a document erased since it was
-- uploaded had text in it.
--
-- Grants: the tables' grants cover the new columns (sluice_consumer
-- writes them, sluice_operator and sluice_console read the batches').

-- +goose Up
ALTER TABLE bulk_members ADD COLUMN line_id text;
UPDATE bulk_members SET line_id = custom_id;
ALTER TABLE bulk_members ALTER COLUMN line_id SET NOT NULL,
    ADD CONSTRAINT bulk_members_line_id_check CHECK (line_id <> '');
-- Admission finds a text's pending line in its generation; applying a
-- result finds the members of a line in its batch.
CREATE INDEX bulk_members_line ON bulk_members (generation, line_id) WHERE state = 'pending';
CREATE INDEX bulk_members_batch_line ON bulk_members (batch_id, line_id) WHERE state = 'pending';

ALTER TABLE bulk_batches
    ADD COLUMN members integer NOT NULL DEFAULT 0 CHECK (members >= 0),
    ADD COLUMN outcome text CHECK (outcome IN ('completed', 'failed', 'expired', 'cancelled', 'lost', 'output_lost')),
    ADD COLUMN error_code text,
    ADD COLUMN error_message text,
    ADD COLUMN unanswered integer NOT NULL DEFAULT 0 CHECK (unanswered >= 0),
    ADD COLUMN upload_requested_at timestamptz,
    ADD COLUMN input_deleted_at timestamptz;
UPDATE bulk_batches SET members = requests;
UPDATE bulk_batches SET outcome = CASE WHEN state = 'applied' THEN 'completed' END WHERE state IN ('applied', 'requeued');
-- The poller follows the traces of uploads it may not know the files of.
CREATE INDEX bulk_batches_upload_unsure ON bulk_batches (batch_id) WHERE upload_requested_at IS NOT NULL;

-- +goose Down
DROP INDEX bulk_batches_upload_unsure;
ALTER TABLE bulk_batches DROP COLUMN input_deleted_at, DROP COLUMN upload_requested_at, DROP COLUMN unanswered,
    DROP COLUMN error_message, DROP COLUMN error_code, DROP COLUMN outcome, DROP COLUMN members;
DROP INDEX bulk_members_batch_line;
DROP INDEX bulk_members_line;
ALTER TABLE bulk_members DROP COLUMN line_id;
