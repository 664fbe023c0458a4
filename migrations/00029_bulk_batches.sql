-- Bulk mode's ledger (issue 33): chunk jobs of a bulk source wait in
-- PostgreSQL, not as unacked messages, while the provider's Batch API
-- embeds them within its 24-hour window. internal/bulk owns both tables.
--
-- bulk_batches holds one row per request file: its state along the
-- lifecycle below, every provider id it was given (recorded as each step
-- ends, so that a process killed between two steps resumes from here),
-- its counts and how far its output and error files were applied.
--
--   open → sealed → uploaded → created → validating → in_progress
--        → finalizing → completed → applied
--   validating | in_progress | finalizing | cancelling
--        → failed | expired | cancelled | lost → requeued
--
-- An open batch takes new members; at most one is open per source and
-- index generation. create_requested_at is set before the provider is
-- asked to create the batch: a batch found uploaded with it set may exist
-- at the provider already, and is looked for (by its input file and the
-- ledger id in its metadata) before it is created again.
--
-- bulk_members holds one row per chunk job: everything needed to build
-- its request line again and to store or park it, its text included
-- (readable by sluice_readonly as chunk_embeddings' is). A member is
-- pending until its result is applied (applied, parked) or it is handed
-- back as owed work (requeued); then it keeps its keys and state but no
-- text. A chunk version is pending in at most
-- one batch of a generation, so a redelivered job is admitted once.
--
-- Grants: sluice_consumer admits members and runs the builder and poller
-- (reads and writes both tables, deletes nothing); sluice_operator reads
-- both and cancels a source's batches (their state and cancel columns);
-- sluice_console reads the batches' counts, never the members' text;
-- the erasing roles (sluice_producer, sluice_operator) delete a deleted
-- document's members by doc_id; sluice_readonly reads both by the
-- default privileges.

-- +goose Up
CREATE TABLE bulk_batches (
    batch_id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    generation          integer NOT NULL DEFAULT 1 CHECK (generation >= 1),
    source_id           text NOT NULL CHECK (source_id <> ''),
    state               text NOT NULL DEFAULT 'open' CHECK (state IN (
                            'open', 'sealed', 'uploaded', 'created',
                            'validating', 'in_progress', 'finalizing', 'cancelling',
                            'completed', 'failed', 'expired', 'cancelled', 'lost',
                            'applied', 'requeued')),
    input_file_id       text,
    provider_batch_id   text UNIQUE,
    output_file_id      text,
    error_file_id       text,
    requests            integer NOT NULL DEFAULT 0 CHECK (requests >= 0),
    inputs              integer NOT NULL DEFAULT 0 CHECK (inputs >= 0),
    bytes               bigint NOT NULL DEFAULT 0 CHECK (bytes >= 0),
    tokens              bigint NOT NULL DEFAULT 0 CHECK (tokens >= 0),
    -- How many lines of the output and error files were applied: a
    -- half-applied file resumes after them.
    output_lines_done   integer NOT NULL DEFAULT 0 CHECK (output_lines_done >= 0),
    error_lines_done    integer NOT NULL DEFAULT 0 CHECK (error_lines_done >= 0),
    stored              integer NOT NULL DEFAULT 0 CHECK (stored >= 0),
    parked              integer NOT NULL DEFAULT 0 CHECK (parked >= 0),
    requeued            integer NOT NULL DEFAULT 0 CHECK (requeued >= 0),
    opened_at           timestamptz NOT NULL,
    sealed_at           timestamptz,
    uploaded_at         timestamptz,
    create_requested_at timestamptz,
    created_at          timestamptz,
    finished_at         timestamptz,
    settled_at          timestamptz,
    cancel_requested_at timestamptz,
    updated_at          timestamptz NOT NULL,
    last_error          text,
    -- A batch cancelled while open was never sealed.
    CHECK (state IN ('open', 'cancelled', 'requeued') OR sealed_at IS NOT NULL),
    CHECK (state NOT IN ('uploaded', 'created') OR input_file_id IS NOT NULL),
    CHECK (state NOT IN ('created', 'validating', 'in_progress', 'finalizing', 'cancelling', 'completed', 'applied')
           OR provider_batch_id IS NOT NULL)
);
CREATE UNIQUE INDEX bulk_batches_one_open ON bulk_batches (source_id, generation) WHERE state = 'open';
-- The builder and poller find their work by state.
CREATE INDEX bulk_batches_unsettled ON bulk_batches (state, batch_id) WHERE state NOT IN ('applied', 'requeued');

CREATE TABLE bulk_members (
    batch_id     bigint NOT NULL REFERENCES bulk_batches,
    custom_id    text NOT NULL CHECK (custom_id <> ''),
    generation   integer NOT NULL CHECK (generation >= 1),
    source_id    text NOT NULL,
    doc_id       text NOT NULL,
    chunk_index  integer NOT NULL CHECK (chunk_index >= 0),
    version      bigint NOT NULL CHECK (version >= 1),
    content_hash text NOT NULL,
    text         text NOT NULL,
    tokens       integer NOT NULL CHECK (tokens >= 0),
    bytes        integer NOT NULL CHECK (bytes >= 0),
    state        text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'applied', 'parked', 'requeued')),
    error_class  text,
    updated_at   timestamptz NOT NULL,
    -- A member that left pending was handed on with its text, and keeps
    -- none.
    CHECK (state = 'pending' OR text = ''),
    PRIMARY KEY (batch_id, custom_id)
);
CREATE UNIQUE INDEX bulk_members_pending_once ON bulk_members (generation, doc_id, chunk_index, version) WHERE state = 'pending';
CREATE INDEX bulk_members_doc ON bulk_members (doc_id);

GRANT SELECT, INSERT, UPDATE ON bulk_batches, bulk_members TO sluice_consumer;
GRANT SELECT ON bulk_batches, bulk_members TO sluice_operator;
GRANT UPDATE (state, cancel_requested_at, finished_at, updated_at, last_error) ON bulk_batches TO sluice_operator;
GRANT SELECT ON bulk_batches TO sluice_console;
-- Erasure (internal/erase): a deleted document's members go, text and all.
GRANT SELECT (doc_id), DELETE ON bulk_members TO sluice_producer, sluice_operator;

-- +goose Down
DROP TABLE bulk_members;
DROP TABLE bulk_batches;
