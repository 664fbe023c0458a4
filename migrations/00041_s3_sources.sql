-- An S3 source is declared by its runs: the producer records the prefix
-- it reads in sources (kind s3), so that `sluice sources ls` shows an S3
-- source's last sync, lag, last error and whether a follower keeps it
-- live, as it does a table source's. A name declared as a source of
-- another kind is refused by the statement (its ON CONFLICT updates s3
-- rows only), never taken over.

-- +goose Up
GRANT INSERT ON sources TO sluice_producer;

-- +goose Down
REVOKE INSERT ON sources FROM sluice_producer;
