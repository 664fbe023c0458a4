-- What a run read, file by file: every file a producer's walk meets is
-- read, excluded by a rule the user can see and change, or parked as a
-- document-level dead letter, and the run records how many of each, so
-- that `sluice runs show` and the console can say what was left out and
-- why. files_excluded maps each exclusion reason (hidden, exclude_glob,
-- format_not_listed, ...) to its count. They are NULL for runs recorded
-- before this migration.
--
-- The columns need no grants of their own: ingest_runs already has them
-- (00020_service_roles.sql), the producer's UPDATE and the console's and
-- the operator's SELECT included.

-- +goose Up
ALTER TABLE ingest_runs
    ADD COLUMN files_seen integer CHECK (files_seen >= 0),
    ADD COLUMN files_read integer CHECK (files_read >= 0),
    ADD COLUMN files_parked integer CHECK (files_parked >= 0),
    ADD COLUMN files_excluded jsonb CHECK (jsonb_typeof(files_excluded) = 'object');

-- +goose Down
ALTER TABLE ingest_runs DROP COLUMN files_excluded, DROP COLUMN files_parked,
    DROP COLUMN files_read, DROP COLUMN files_seen;
