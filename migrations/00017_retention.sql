-- Retention of everything a dead letter leaves behind (internal/retention,
-- run by the dlq-replayer).
--
-- A parked chunk's job bytes are its dead letter's payload verbatim, so
-- they go when that payload goes, or once the dead letter is resolved;
-- the job stays owed for pending rows only. The indexes let each purge
-- statement reach the rows it may purge without scanning the tables
-- that hold the rest: the parked rows still holding a job, the
-- by-reference payloads, history and escalated text by age, and the dead
-- letter whose current payload a by-reference copy is.

-- +goose Up
ALTER TABLE ingest_manifest DROP CONSTRAINT ingest_manifest_job_owed;
ALTER TABLE ingest_manifest ADD CONSTRAINT ingest_manifest_job_owed
    CHECK (job IS NOT NULL OR status IN ('stored', 'superseded', 'parked'));
CREATE INDEX ingest_manifest_parked_job ON ingest_manifest (doc_id, chunk_index)
    WHERE status = 'parked' AND job IS NOT NULL;

CREATE INDEX dead_letters_last_outbox ON dead_letters (last_outbox_id);
CREATE INDEX dead_letter_payloads_created ON dead_letter_payloads (created_at);
CREATE INDEX dead_letter_history_at ON dead_letter_history (at);
CREATE INDEX escalated_chunks_created ON escalated_chunks (created_at);

-- +goose Down
DROP INDEX escalated_chunks_created;
DROP INDEX dead_letter_history_at;
DROP INDEX dead_letter_payloads_created;
DROP INDEX dead_letters_last_outbox;
DROP INDEX ingest_manifest_parked_job;
ALTER TABLE ingest_manifest DROP CONSTRAINT ingest_manifest_job_owed;
-- A parked job retention cleared cannot come back: its dead letter has
-- lost its payload too. An empty job keeps the older constraint.
UPDATE ingest_manifest SET job = '' WHERE job IS NULL AND status = 'parked';
ALTER TABLE ingest_manifest ADD CONSTRAINT ingest_manifest_job_owed
    CHECK (job IS NOT NULL OR status IN ('stored', 'superseded'));
