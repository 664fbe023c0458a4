-- Run halting: a run whose rejection ratio crosses its source's threshold
-- is halted (consumers hold its jobs, the producer stops publishing) until
-- an operator resumes or cancels it. A held delivery is counted in
-- ingest_manifest.held_deliveries so that it never spends the chunk's
-- delivery budget; resumed_at waives the threshold for the rest of the
-- run, so a resumed run is not halted again for the same failures.

-- +goose Up
ALTER TABLE ingest_runs DROP CONSTRAINT ingest_runs_status_check;
ALTER TABLE ingest_runs ADD CONSTRAINT ingest_runs_status_check
    CHECK (status IN ('running', 'completed', 'completed_with_failures', 'halted', 'cancelled', 'failed'));
ALTER TABLE ingest_runs
    ADD COLUMN halted_at timestamptz,
    ADD COLUMN resumed_at timestamptz;
ALTER TABLE ingest_manifest ADD COLUMN held_deliveries integer NOT NULL DEFAULT 0;
CREATE INDEX ingest_runs_halted ON ingest_runs (status) WHERE status = 'halted';

-- +goose Down
DROP INDEX ingest_runs_halted;
ALTER TABLE ingest_manifest DROP COLUMN held_deliveries;
ALTER TABLE ingest_runs DROP COLUMN resumed_at, DROP COLUMN halted_at;
UPDATE ingest_runs SET status = 'failed' WHERE status = 'cancelled';
ALTER TABLE ingest_runs DROP CONSTRAINT ingest_runs_status_check;
ALTER TABLE ingest_runs ADD CONSTRAINT ingest_runs_status_check
    CHECK (status IN ('running', 'completed', 'completed_with_failures', 'halted', 'failed'));
