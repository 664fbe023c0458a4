-- Retention and replay governance.
--
-- A stored chunk's job bytes are dead weight: its text lives in
-- chunk_embeddings, and only pending or parked rows are ever republished
-- (the sweeper, reconcile --redrive, the relay). job is now NULL once a
-- row is stored; content_hash, version and the publish bookkeeping stay.
--
-- replay_audit records dry runs too (action dry_run, no reason needed),
-- and the outcome of each replay is read from dead_letter_history, which
-- the index below lets a replay's events be found by replay id.

-- +goose Up
ALTER TABLE ingest_manifest ALTER COLUMN job DROP NOT NULL;
ALTER TABLE ingest_manifest ADD CONSTRAINT ingest_manifest_job_owed
    CHECK (job IS NOT NULL OR status IN ('stored', 'superseded'));
UPDATE ingest_manifest SET job = NULL WHERE status = 'stored';

ALTER TABLE replay_audit DROP CONSTRAINT replay_audit_action_check;
ALTER TABLE replay_audit ADD CONSTRAINT replay_audit_action_check
    CHECK (action IN ('replay', 'dry_run', 'pause', 'resume'));
ALTER TABLE replay_audit ALTER COLUMN reason DROP NOT NULL;
ALTER TABLE replay_audit ADD CONSTRAINT replay_audit_reason_given
    CHECK (reason IS NOT NULL OR action = 'dry_run');
CREATE INDEX dead_letter_history_replay ON dead_letter_history (replay_id) WHERE replay_id IS NOT NULL;

-- +goose Down
DROP INDEX dead_letter_history_replay;
DELETE FROM replay_audit WHERE action = 'dry_run';
ALTER TABLE replay_audit DROP CONSTRAINT replay_audit_reason_given;
ALTER TABLE replay_audit ALTER COLUMN reason SET NOT NULL;
ALTER TABLE replay_audit DROP CONSTRAINT replay_audit_action_check;
ALTER TABLE replay_audit ADD CONSTRAINT replay_audit_action_check
    CHECK (action IN ('replay', 'pause', 'resume'));
ALTER TABLE ingest_manifest DROP CONSTRAINT ingest_manifest_job_owed;
UPDATE ingest_manifest SET job = '' WHERE job IS NULL;
ALTER TABLE ingest_manifest ALTER COLUMN job SET NOT NULL;
