-- The text of a chunk escalated for holding a secret is kept once, here,
-- and nowhere else: its manifest job, outbox row, DLQ message and
-- dead_letters payload carry a redacted job instead. Only roles that must
-- see it may read this table.

-- +goose Up
CREATE TABLE escalated_chunks (
    doc_id      text NOT NULL,
    chunk_index integer NOT NULL,
    version     bigint NOT NULL,
    rule        text NOT NULL,
    text        text NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (doc_id, chunk_index, version)
);

-- +goose Down
DROP TABLE escalated_chunks;
