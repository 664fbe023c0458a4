-- The object ledger of the object-storage source: what a run last
-- recorded of each object under an S3 prefix, so that the next run fetches
-- only the objects whose ETag, version id or size changed. A row is
-- written only after the object's document is recorded by the run
-- (internal/store/objects); a run killed mid-listing or mid-fetch leaves
-- the rows of what it recorded, and the next run skips those objects.
-- last_seen_run is the last run whose listing named the object: after a
-- complete listing, the rows it did not touch are the objects that are
-- gone, whose documents the run deletes.

-- +goose Up
CREATE TABLE object_ledger (
    source_id     text NOT NULL,
    bucket        text NOT NULL,
    object_key    text NOT NULL,
    etag          text NOT NULL,
    version_id    text NOT NULL DEFAULT '',
    size          bigint NOT NULL CHECK (size >= 0),
    last_seen_run text NOT NULL,
    doc_id        text NOT NULL,
    recorded_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (source_id, bucket, object_key)
);

CREATE INDEX object_ledger_seen ON object_ledger (source_id, bucket, last_seen_run);

GRANT SELECT, INSERT, UPDATE, DELETE ON object_ledger TO sluice_producer;
GRANT SELECT ON object_ledger TO sluice_operator, sluice_console, sluice_readonly;

-- +goose Down
DROP TABLE object_ledger;
