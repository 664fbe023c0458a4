-- Run liveness: a producer beats its run's heartbeat_at every few
-- seconds while it runs. A run whose producer fell silent for longer than
-- the run's heartbeat_timeout (the producer was killed, or its machine
-- lost) before it finished publishing, and none of whose chunks is still
-- pending, ends interrupted instead of staying running forever; a later
-- run of the same source finishes its work. The producer records its own
-- timeout, since only it knows how often it beats; a run without one is
-- judged by the default of package runs.
--
-- The columns need no grants of their own: ingest_runs already has them
-- (00011_roles.sql).

-- +goose Up
ALTER TABLE ingest_runs
    ADD COLUMN heartbeat_at timestamptz,
    ADD COLUMN heartbeat_timeout interval CHECK (heartbeat_timeout > interval '0');
ALTER TABLE ingest_runs ALTER COLUMN heartbeat_at SET DEFAULT now();
-- Open runs of producers that never beat are judged from now on.
UPDATE ingest_runs SET heartbeat_at = now() WHERE status = 'running' AND publish_finished_at IS NULL;
ALTER TABLE ingest_runs DROP CONSTRAINT ingest_runs_status_check;
ALTER TABLE ingest_runs ADD CONSTRAINT ingest_runs_status_check
    CHECK (status IN ('running', 'completed', 'completed_with_failures', 'halted', 'cancelled', 'interrupted', 'failed'));

-- +goose Down
UPDATE ingest_runs SET status = 'failed' WHERE status = 'interrupted';
ALTER TABLE ingest_runs DROP CONSTRAINT ingest_runs_status_check;
ALTER TABLE ingest_runs ADD CONSTRAINT ingest_runs_status_check
    CHECK (status IN ('running', 'completed', 'completed_with_failures', 'halted', 'cancelled', 'failed'));
ALTER TABLE ingest_runs DROP COLUMN heartbeat_timeout, DROP COLUMN heartbeat_at;
