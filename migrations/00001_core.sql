-- Core tables of DESIGN §5. chunk_embeddings is created by migration 2,
-- which is Go because its column type depends on pgvector and the
-- configured dimension.

-- +goose Up
CREATE TABLE sluice_settings (
    key   text PRIMARY KEY,
    value text NOT NULL
);

CREATE TABLE ingest_runs (
    run_id        text PRIMARY KEY,
    source_id     text NOT NULL,
    started_at    timestamptz NOT NULL DEFAULT now(),
    finished_at   timestamptz,
    status        text NOT NULL DEFAULT 'running'
                  CHECK (status IN ('running', 'completed', 'completed_with_failures', 'halted', 'failed')),
    documents     integer NOT NULL DEFAULT 0,
    published     integer NOT NULL DEFAULT 0,
    stored        integer NOT NULL DEFAULT 0,
    parked        integer NOT NULL DEFAULT 0,
    halted_reason text
);

CREATE TABLE documents (
    doc_id           text PRIMARY KEY,
    source_id        text NOT NULL,
    source_native_id text NOT NULL,
    run_id           text,
    version          bigint NOT NULL CHECK (version >= 1),
    content_hash     text NOT NULL,
    chunk_count      integer NOT NULL CHECK (chunk_count >= 0),
    status           text NOT NULL
                     CHECK (status IN ('pending', 'processing', 'ready', 'failed', 'empty')),
    codec            text,
    metadata         jsonb NOT NULL DEFAULT '{}',
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now(),
    UNIQUE (source_id, source_native_id)
);

-- One row per chunk of a document's current version. job holds the exact
-- bytes published for it, so the chunk can be re-published from Postgres
-- alone (reconcile --redrive) and a parked job's payload is verbatim.
CREATE TABLE ingest_manifest (
    doc_id           text NOT NULL REFERENCES documents (doc_id) ON DELETE CASCADE,
    chunk_index      integer NOT NULL CHECK (chunk_index >= 0),
    version          bigint NOT NULL CHECK (version >= 1),
    content_hash     text NOT NULL,
    status           text NOT NULL CHECK (status IN ('pending', 'stored', 'parked', 'superseded')),
    attempts         integer NOT NULL DEFAULT 0,
    last_error_class text,
    replay_gen       integer NOT NULL DEFAULT 0,
    run_id           text,
    job              bytea NOT NULL,
    published_at     timestamptz,
    updated_at       timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (doc_id, chunk_index)
);

CREATE INDEX ingest_manifest_pending ON ingest_manifest (updated_at) WHERE status = 'pending';
CREATE INDEX ingest_manifest_run ON ingest_manifest (run_id, status);

-- The transactional outbox. Rows are written only in the transaction that
-- parks a chunk; the relay publishes them with Nats-Msg-Id msg_id.
CREATE TABLE outbox (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    subject      text NOT NULL,
    msg_id       text GENERATED ALWAYS AS ('dl:' || id::text) STORED UNIQUE,
    headers      jsonb NOT NULL DEFAULT '{}',
    payload      jsonb NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    published_at timestamptz
);

CREATE INDEX outbox_unpublished ON outbox (created_at) WHERE published_at IS NULL;

-- The triage view, one row per chunk, kept by the DLQ consumer "triage".
CREATE TABLE dead_letters (
    dead_letter_id   text PRIMARY KEY,
    doc_id           text NOT NULL,
    chunk_index      integer NOT NULL,
    version          bigint NOT NULL,
    source_id        text NOT NULL,
    source_native_id text NOT NULL,
    run_id           text,
    disposition      text NOT NULL CHECK (disposition IN ('retry', 'quarantine', 'ambiguous', 'escalate')),
    error_class      text NOT NULL,
    error_code       text,
    error_detail     text CHECK (length(error_detail) <= 2000),
    stage            text NOT NULL,
    attempts         integer NOT NULL CHECK (attempts >= 1),
    replay_gen       integer NOT NULL DEFAULT 0,
    payload          bytea,
    last_outbox_id   bigint NOT NULL,
    first_failed_at  timestamptz NOT NULL,
    last_failed_at   timestamptz NOT NULL,
    next_retry_at    timestamptz,
    replayed_at      timestamptz,
    replay_id        text,
    resolved_at      timestamptz,
    payload_purged_at timestamptz,
    UNIQUE (doc_id, chunk_index)
);

CREATE INDEX dead_letters_class ON dead_letters (error_class, last_failed_at);
CREATE INDEX dead_letters_source ON dead_letters (source_id, last_failed_at);
CREATE INDEX dead_letters_due ON dead_letters (next_retry_at) WHERE resolved_at IS NULL;

CREATE TABLE replay_audit (
    replay_id    text PRIMARY KEY,
    requested_at timestamptz NOT NULL DEFAULT now(),
    reason       text NOT NULL CHECK (reason <> ''),
    scope        jsonb NOT NULL,
    dry_run      boolean NOT NULL,
    selected     integer NOT NULL,
    dispatched   integer NOT NULL DEFAULT 0
);

-- +goose Down
DROP TABLE replay_audit;
DROP TABLE dead_letters;
DROP TABLE outbox;
DROP TABLE ingest_manifest;
DROP TABLE documents;
DROP TABLE ingest_runs;
DROP TABLE sluice_settings;
