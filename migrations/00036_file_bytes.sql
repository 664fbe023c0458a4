-- The bytes of the files the producer parks whole (a document-level dead
-- letter: encrypted, corrupt, too large, unsupported), kept so that the
-- file can be replayed after the cause is fixed even when the source file
-- has changed or gone. file_bytes holds each content once, addressed by
-- its SHA-256; file_bytes_refs says which dead letter needs which
-- content, so that a thousand copies of one PDF are kept once and the
-- bytes go when the last dead letter that needs them lets go of them:
-- retention purges a reference with its dead letter's payload, erasure
-- with its document, and then the unreferenced content.
--
-- Grants: the producer keeps bytes as it parks a file, and so does the
-- sluice CLI (its replays park again what still fails) and reads them
-- back to replay; both erase a document's (00023's erasing roles);
-- dlq-replayer's retention purges them. FOR UPDATE in retention's and
-- the keep's statements needs an UPDATE grant.

-- +goose Up
CREATE TABLE file_bytes (
    sha256     text PRIMARY KEY CHECK (sha256 ~ '^[0-9a-f]{64}$'),
    bytes      bytea NOT NULL,
    size       bigint NOT NULL CHECK (size >= 0),
    created_at timestamptz NOT NULL DEFAULT now(),
    CHECK (octet_length(bytes) = size)
);
-- Bytes are compressed already, or not worth compressing inline.
ALTER TABLE file_bytes ALTER COLUMN bytes SET STORAGE EXTERNAL;

CREATE TABLE file_bytes_refs (
    dead_letter_id text PRIMARY KEY,
    doc_id         text NOT NULL,
    sha256         text NOT NULL REFERENCES file_bytes (sha256),
    created_at     timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX file_bytes_refs_sha256 ON file_bytes_refs (sha256);
CREATE INDEX file_bytes_refs_doc ON file_bytes_refs (doc_id);

GRANT SELECT (sha256, size, created_at), INSERT, UPDATE (created_at), DELETE ON file_bytes TO sluice_producer, sluice_operator;
GRANT SELECT (bytes) ON file_bytes TO sluice_operator;
GRANT SELECT, INSERT, UPDATE (sha256, doc_id, created_at), DELETE ON file_bytes_refs TO sluice_producer, sluice_operator;
GRANT SELECT (sha256, size, created_at), UPDATE (created_at), DELETE ON file_bytes TO sluice_replayer;
GRANT SELECT, UPDATE (created_at), DELETE ON file_bytes_refs TO sluice_replayer;
GRANT SELECT (sha256, size, created_at) ON file_bytes TO sluice_console;
GRANT SELECT ON file_bytes_refs TO sluice_console;

-- +goose Down
DROP TABLE file_bytes_refs;
DROP TABLE file_bytes;
