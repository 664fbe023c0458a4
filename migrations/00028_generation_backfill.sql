-- Backfilling index generations (DESIGN §9, invariant 11). A later
-- generation is written through the same queue as live work, on its own
-- subject (ingest.backfill.<source>) and durable (backfill), by the
-- consumers, from the chunk text PostgreSQL already holds.
--
-- generation_backfill_queue holds the chunks a later generation is owed,
-- until a consumer has published them: rows come from the store
-- transaction of every chunk the pipeline stores (so that new and changed
-- documents reach every generation being kept, committed with the
-- chunk's own vector) and from the backfill's scan of what the generation
-- lacks, page by page, from the cursor kept in generation_backfill. A
-- consumer publishes a page and deletes it in one transaction, so a row
-- is published at least once, and the JetStream dedupe window and the
-- store's version guard absorb a second time.
--
-- generation_parked holds the chunks a later generation could not embed:
-- the generation's own dead letters, with the same classes as live
-- ingestion's, keyed like its vectors. A chunk parked in one generation
-- stays stored in the others. A transient failure's chunk is released to
-- the backfill again after a delay, a bounded number of times; sluice
-- index retry clears a generation's parked chunks so that its backfill
-- owes them again. None of the three tables holds text.
--
-- lock_generation_for_write share-locks a generation's registry row for
-- the rest of the caller's transaction and returns its status: a
-- backfill's write waits for a drop or an activation of its generation,
-- and sees it, without the consumer holding any right to change the
-- registry.
--
-- mark_generation_ready moves a building generation to ready, once its
-- backfill finds nothing owed or parked, with an audit entry: consumers
-- may make that one change to the registry, through the owner, and no
-- other.
--
-- Grants: the roles that run the pipeline's store transaction
-- (sluice_consumer, sluice_replayer) read the registry, queue chunks and
-- prune a document's older rows in every later generation; sluice_consumer
-- also runs the backfill (writes later generations' vectors, scans,
-- publishes, parks). sluice_operator reads everything, clears parked
-- chunks (audited) and starts another pass (reconcile --redrive); the erasing roles delete a document's rows;
-- sluice_console reads the backfill's state for the overview.

-- +goose Up
ALTER TABLE index_generation_audit DROP CONSTRAINT index_generation_audit_action_check,
    ADD CONSTRAINT index_generation_audit_action_check CHECK (action IN ('create', 'activate', 'drop', 'build', 'ready', 'retry'));

CREATE TABLE generation_backfill (
    generation   integer PRIMARY KEY REFERENCES index_generations (generation) CHECK (generation >= 2),
    -- The last chunk the current pass planned, NULL before its first page.
    cursor_doc   text,
    cursor_chunk integer,
    pass         integer NOT NULL DEFAULT 1 CHECK (pass >= 1),
    -- The current pass reached the end of the manifest.
    scanned      boolean NOT NULL DEFAULT false,
    planned      bigint NOT NULL DEFAULT 0 CHECK (planned >= 0),
    started_at   timestamptz NOT NULL DEFAULT now(),
    updated_at   timestamptz NOT NULL DEFAULT now(),
    CHECK ((cursor_doc IS NULL) = (cursor_chunk IS NULL))
);

CREATE TABLE generation_backfill_queue (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    generation   integer NOT NULL REFERENCES index_generations (generation) CHECK (generation >= 2),
    doc_id       text NOT NULL,
    chunk_index  integer NOT NULL CHECK (chunk_index >= 0),
    version      bigint NOT NULL CHECK (version >= 1),
    content_hash text NOT NULL,
    source_id    text NOT NULL,
    queued_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX generation_backfill_queue_generation ON generation_backfill_queue (generation);
CREATE INDEX generation_backfill_queue_doc ON generation_backfill_queue (doc_id);

CREATE TABLE generation_parked (
    generation   integer NOT NULL REFERENCES index_generations (generation) CHECK (generation >= 2),
    doc_id       text NOT NULL,
    chunk_index  integer NOT NULL CHECK (chunk_index >= 0),
    version      bigint NOT NULL CHECK (version >= 1),
    content_hash text NOT NULL,
    source_id    text NOT NULL,
    error_class  text NOT NULL,
    error_detail text CHECK (length(error_detail) <= 2000),
    attempts     integer NOT NULL CHECK (attempts >= 1),
    parked_at    timestamptz NOT NULL DEFAULT now(),
    -- A chunk parked because a transient budget ran out is released to
    -- the backfill again after a delay, a bounded number of times, as
    -- the replayer does for generation 1: released_at is when, and
    -- replays counts how often.
    replays      integer NOT NULL DEFAULT 0 CHECK (replays >= 0),
    released_at  timestamptz,
    PRIMARY KEY (generation, doc_id, chunk_index)
);
CREATE INDEX generation_parked_doc ON generation_parked (doc_id);

-- +goose StatementBegin
CREATE FUNCTION mark_generation_ready(gen integer, progress jsonb) RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_catalog, pg_temp AS $$
BEGIN
    UPDATE index_generations SET status = 'ready' WHERE generation = gen AND status = 'building';
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    INSERT INTO index_generation_audit (generation, action, requested_by, reason, dry_run, detail)
    VALUES (gen, 'ready', 'backfill', 'the backfill found nothing owed or parked', false, coalesce(progress, '{}'));
    RETURN true;
END $$;
-- +goose StatementEnd
REVOKE ALL ON FUNCTION mark_generation_ready(integer, jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mark_generation_ready(integer, jsonb) TO sluice_consumer;

-- +goose StatementBegin
CREATE FUNCTION lock_generation_for_write(gen integer) RETURNS text
LANGUAGE sql SECURITY DEFINER SET search_path = public, pg_catalog, pg_temp AS $$
    SELECT status FROM index_generations WHERE generation = gen FOR SHARE
$$;
-- +goose StatementEnd
REVOKE ALL ON FUNCTION lock_generation_for_write(integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION lock_generation_for_write(integer) TO sluice_consumer;

GRANT SELECT ON index_generations TO sluice_consumer, sluice_replayer;
GRANT SELECT, DELETE ON generation_embeddings TO sluice_replayer;
GRANT SELECT, INSERT, UPDATE, DELETE ON generation_embeddings TO sluice_consumer;
GRANT INSERT ON generation_backfill_queue TO sluice_replayer;
-- UPDATE only for the row locks of a page being published (FOR UPDATE
-- SKIP LOCKED): no statement changes a queued row.
GRANT SELECT, INSERT, UPDATE, DELETE ON generation_backfill_queue TO sluice_consumer;
GRANT SELECT, INSERT, UPDATE ON generation_backfill TO sluice_consumer;
GRANT SELECT, INSERT, UPDATE, DELETE ON generation_parked TO sluice_consumer;

GRANT SELECT ON generation_backfill, generation_backfill_queue, generation_parked TO sluice_operator, sluice_console;
-- The overview's rate of a generation's writes (internal/generation.ProgressOf).
GRANT SELECT (updated_at) ON generation_embeddings TO sluice_console;
GRANT DELETE ON generation_parked TO sluice_operator;
-- `sluice reconcile --redrive` starts another pass of a generation whose backfill
-- stranded a chunk (generation.NewPass).
GRANT UPDATE (cursor_doc, cursor_chunk, scanned, pass, updated_at) ON generation_backfill TO sluice_operator;
GRANT SELECT (doc_id), DELETE ON generation_backfill_queue, generation_parked TO sluice_producer, sluice_operator;

-- +goose Down
DROP FUNCTION lock_generation_for_write(integer);
DROP FUNCTION mark_generation_ready(integer, jsonb);
REVOKE ALL ON generation_embeddings FROM sluice_consumer, sluice_replayer;
REVOKE SELECT (updated_at) ON generation_embeddings FROM sluice_console;
REVOKE ALL ON index_generations FROM sluice_consumer, sluice_replayer;
DROP TABLE generation_parked;
DROP TABLE generation_backfill_queue;
DROP TABLE generation_backfill;
DELETE FROM index_generation_audit WHERE action IN ('ready', 'retry');
ALTER TABLE index_generation_audit DROP CONSTRAINT index_generation_audit_action_check,
    ADD CONSTRAINT index_generation_audit_action_check CHECK (action IN ('create', 'activate', 'drop', 'build'));
