-- When the producer finished publishing a run. A run reaches a terminal
-- status (finished_at) only after this and once none of its chunks is
-- pending.

-- +goose Up
ALTER TABLE ingest_runs ADD COLUMN publish_finished_at timestamptz;

-- +goose Down
ALTER TABLE ingest_runs DROP COLUMN publish_finished_at;
