-- sources holds the sources an operator declared: one row per source,
-- its kind and the settings its reader needs. A table source names a
-- table in the application's own PostgreSQL database (settings: the
-- reference to its DSN, never the password itself, the schema-qualified
-- table, the id column, the text and metadata columns and an optional
-- filter); the other kinds are read from the producer's command line and
-- need no row. The producer records each run's end on the row
-- (last_sync_at, last_error, lag_seconds), and a follower its last
-- wake-up (followed_at), which is how `sluice sources ls` tells a live
-- source from a batch one.

-- +goose Up
CREATE TABLE sources (
    name text PRIMARY KEY CHECK (name ~ '^[A-Za-z0-9_-]+$'),
    kind text NOT NULL CHECK (kind IN ('table', 'directory', 'jsonl', 's3')),
    settings jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(settings) = 'object'),
    created_at timestamptz NOT NULL DEFAULT now(),
    last_sync_at timestamptz,
    last_error text,
    lag_seconds double precision CHECK (lag_seconds >= 0),
    followed_at timestamptz
);

-- The producer reads its source's settings and records its syncs; the
-- operator declares and removes sources; the console lists them.
GRANT SELECT, UPDATE ON sources TO sluice_producer;
GRANT SELECT, INSERT, UPDATE, DELETE ON sources TO sluice_operator;
GRANT SELECT ON sources TO sluice_console;

-- +goose Down
DROP TABLE sources;
