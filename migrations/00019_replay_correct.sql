-- Corrected replays.
--
-- An operator may replay one dead letter with a corrected payload (sluice
-- dlq correct): replay_audit records each correction, dry run or
-- executed, as action correct, with its reason and, in scope, the diff
-- of the payload (content hashes before and after, and line diffs of the
-- text and metadata).

-- +goose Up
ALTER TABLE replay_audit DROP CONSTRAINT replay_audit_action_check;
ALTER TABLE replay_audit ADD CONSTRAINT replay_audit_action_check
    CHECK (action IN ('replay', 'dry_run', 'pause', 'resume', 'correct'));

-- +goose Down
DELETE FROM replay_audit WHERE action = 'correct';
ALTER TABLE replay_audit DROP CONSTRAINT replay_audit_action_check;
ALTER TABLE replay_audit ADD CONSTRAINT replay_audit_action_check
    CHECK (action IN ('replay', 'dry_run', 'pause', 'resume'));
