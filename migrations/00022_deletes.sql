-- Deleting documents. A delete is a new version of its document, a
-- tombstone: documents.status 'deleted', at its old version plus one,
-- with no chunks, no content hash and no metadata. The transaction that
-- records it erases the document's text everywhere PostgreSQL holds it
-- (internal/erase): vectors and text in chunk_embeddings and
-- chunk_embeddings_previous, manifest job bytes, dead-letter payloads
-- and escalated text. What stays is counts, ids and the audit below.
--
-- deletion_requests records every request, dry runs included, with who
-- asked and why (sluice docs delete) or which run (producer --sync);
-- document_deletions records each document a request deleted and what
-- its erasure removed. Both are append-only: the runtime roles insert
-- and read them.
--
-- dead_letter_payloads gains doc_id, so that a document's by-reference
-- payloads are found by its id: every dead letter now travels to the
-- DLQ stream without its payload (internal/deadletter.Write), which
-- keeps the stream free of text a delete could not reach.

-- +goose Up
ALTER TABLE documents DROP CONSTRAINT documents_status_check;
ALTER TABLE documents ADD CONSTRAINT documents_status_check
    CHECK (status IN ('pending', 'processing', 'ready', 'failed', 'empty', 'deleted'));
ALTER TABLE documents ADD COLUMN deleted_at timestamptz;

CREATE TABLE deletion_requests (
    request_id   text PRIMARY KEY,
    requested_at timestamptz NOT NULL DEFAULT now(),
    requested_by text NOT NULL CHECK (requested_by <> ''),
    reason       text NOT NULL CHECK (reason <> ''),
    source_id    text NOT NULL,
    run_id       text,
    dry_run      boolean NOT NULL,
    selected     integer NOT NULL
);
CREATE INDEX deletion_requests_requested ON deletion_requests (requested_at DESC);

CREATE TABLE document_deletions (
    request_id       text NOT NULL REFERENCES deletion_requests (request_id),
    doc_id           text NOT NULL,
    source_id        text NOT NULL,
    source_native_id text NOT NULL,
    version          bigint NOT NULL,
    deleted_at       timestamptz NOT NULL DEFAULT now(),
    vectors          integer NOT NULL,
    text_rows        integer NOT NULL,
    jobs             integer NOT NULL,
    payloads         integer NOT NULL,
    dead_letters     integer NOT NULL,
    PRIMARY KEY (doc_id, version)
);
CREATE INDEX document_deletions_request ON document_deletions (request_id);

ALTER TABLE dead_letter_payloads ADD COLUMN doc_id text;
CREATE INDEX dead_letter_payloads_doc ON dead_letter_payloads (doc_id) WHERE doc_id IS NOT NULL;
CREATE INDEX documents_deleted ON documents (doc_id) WHERE status = 'deleted';
-- Outbox rows written before this migration hold their dead letter's
-- payload; a delete blanks those of its document, found by this index.
CREATE INDEX outbox_doc ON outbox ((payload->>'doc_id'));

REVOKE UPDATE, DELETE ON deletion_requests, document_deletions FROM sluice_runtime;

-- +goose Down
DROP INDEX outbox_doc;
DROP INDEX documents_deleted;
DROP INDEX dead_letter_payloads_doc;
ALTER TABLE dead_letter_payloads DROP COLUMN doc_id;
DROP TABLE document_deletions;
DROP TABLE deletion_requests;
ALTER TABLE documents DROP COLUMN deleted_at;
DELETE FROM documents WHERE status = 'deleted';
ALTER TABLE documents DROP CONSTRAINT documents_status_check;
ALTER TABLE documents ADD CONSTRAINT documents_status_check
    CHECK (status IN ('pending', 'processing', 'ready', 'failed', 'empty'));
