-- One PostgreSQL role per service, each granted only what its statements
-- need (DESIGN §7, invariant 9); migrations still run as the schema owner.
--
--   sluice_producer   the producer
--   sluice_consumer   the consumer
--   sluice_relay      the outbox relay (and its owed-job sweeper)
--   sluice_replayer   dlq-replayer: triage, replayer, alerter, retention
--   sluice_operator   the sluice CLI
--   sluice_console    sluice console
--   sluice_readonly   reports (migration 11), unchanged
--
-- sluice_runtime, which migration 11 gave every row of every table, loses
-- all of it here: nothing connects as it any more. The role itself stays,
-- as roles belong to the cluster.
--
-- Below the owner:
--   - nobody reads escalated_chunks.text; sluice_operator may, one chunk at
--     a time, through reveal_escalated_text, which records who asked and
--     why in escalated_text_audit first;
--   - replay_audit, dead_letter_history and escalated_text_audit are
--     append-only: INSERT and SELECT at most, never UPDATE or DELETE. A
--     replay's dispatched count is recorded once by
--     record_replay_dispatched, history is written by its trigger as the
--     owner, and retention deletes old history only through
--     purge_dead_letter_history;
--   - the outbox takes only well-formed dead letters on their own DLQ
--     subject (outbox_row_ok), whoever writes them; the relay checks again
--     before publishing and flags a row it refuses (refused_at).
--
-- Default privileges no longer give service roles anything: a later table
-- grants each role what it needs, in its own migration (see doc.go).

-- +goose Up
-- +goose StatementBegin
DO $$
DECLARE
    r text;
BEGIN
    FOREACH r IN ARRAY ARRAY['sluice_producer', 'sluice_consumer', 'sluice_relay', 'sluice_replayer',
                             'sluice_operator', 'sluice_console'] LOOP
        IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = r) THEN
            BEGIN
                EXECUTE format('CREATE ROLE %I NOLOGIN', r);
            EXCEPTION WHEN duplicate_object OR unique_violation THEN
                NULL; -- created meanwhile by a migration of another database
            END;
        END IF;
    END LOOP;
END $$;
-- +goose StatementEnd

-- sluice_runtime keeps nothing in this database.
ALTER DEFAULT PRIVILEGES IN SCHEMA public REVOKE ALL ON TABLES FROM sluice_runtime;
ALTER DEFAULT PRIVILEGES IN SCHEMA public REVOKE ALL ON SEQUENCES FROM sluice_runtime;
REVOKE ALL ON ALL TABLES IN SCHEMA public FROM sluice_runtime;
REVOKE ALL ON ALL SEQUENCES IN SCHEMA public FROM sluice_runtime;
REVOKE USAGE ON SCHEMA public FROM sluice_runtime;

GRANT USAGE ON SCHEMA public TO sluice_producer, sluice_consumer, sluice_relay, sluice_replayer,
    sluice_operator, sluice_console;
REVOKE CREATE ON SCHEMA public FROM sluice_producer, sluice_consumer, sluice_relay, sluice_replayer,
    sluice_operator, sluice_console;
-- Functions are executable by PUBLIC unless revoked; the ones below are
-- granted by name.
ALTER DEFAULT PRIVILEGES IN SCHEMA public REVOKE EXECUTE ON FUNCTIONS FROM PUBLIC;

-- Everyone reads the schema's version and fixed settings (EMBEDDING_DIMS).
GRANT SELECT ON goose_db_version, sluice_settings TO sluice_producer, sluice_consumer, sluice_relay,
    sluice_replayer, sluice_operator, sluice_console;

-- The outbox: a flag for rows the relay refuses, and the shape every row
-- must have.
ALTER TABLE outbox ADD COLUMN refused_at timestamptz;

-- +goose StatementBegin
CREATE FUNCTION outbox_row_ok(subject text, headers jsonb, payload jsonb) RETURNS boolean
LANGUAGE sql IMMUTABLE SET search_path = pg_catalog AS $$
    SELECT coalesce(
        subject ~ '^dlq\.(retry|quarantine|ambiguous|escalate)\.[A-Za-z0-9_-]{1,64}$'
        AND jsonb_typeof(headers) = 'object'
        AND NOT EXISTS (SELECT 1 FROM jsonb_each(headers) h
                        WHERE h.key !~ '^Sluice-[A-Za-z-]{1,64}$' OR jsonb_typeof(h.value) <> 'string')
        AND jsonb_typeof(payload) = 'object'
        AND payload -> 'schema' = '1'::jsonb
        AND subject = 'dlq.' || (payload ->> 'disposition') || '.' || (payload ->> 'source_id')
        AND jsonb_typeof(payload -> 'dead_letter_id') = 'string'
        AND jsonb_typeof(payload -> 'doc_id') = 'string'
        AND jsonb_typeof(payload -> 'chunk_index') = 'number'
        AND jsonb_typeof(payload -> 'error_class') = 'string'
        AND jsonb_typeof(payload -> 'stage') = 'string'
        AND jsonb_typeof(payload -> 'attempts') = 'number'
        AND jsonb_typeof(payload -> 'failed_at') = 'string'
        AND jsonb_typeof(payload -> 'payload') = 'string', false)
$$;
-- +goose StatementEnd
GRANT EXECUTE ON FUNCTION outbox_row_ok(text, jsonb, jsonb) TO PUBLIC;

-- NOT VALID: rows already there are the relay's to judge; every row
-- written from now on is checked, unless the relay flagged it refused (a
-- refused row is never claimed again, and no writer may set refused_at).
ALTER TABLE outbox ADD CONSTRAINT outbox_dead_letter
    CHECK (refused_at IS NOT NULL OR outbox_row_ok(subject, headers, payload)) NOT VALID;

-- Escalated text: who read it, and why.
CREATE TABLE escalated_text_audit (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at           timestamptz NOT NULL DEFAULT now(),
    doc_id       text NOT NULL,
    chunk_index  integer NOT NULL,
    version      bigint NOT NULL,
    requested_by text NOT NULL CHECK (requested_by <> ''),
    login        text NOT NULL DEFAULT session_user,
    reason       text NOT NULL CHECK (reason <> '')
);
REVOKE ALL ON escalated_text_audit FROM sluice_readonly;
GRANT SELECT ON escalated_text_audit TO sluice_readonly;

-- +goose StatementBegin
CREATE FUNCTION reveal_escalated_text(p_doc_id text, p_chunk_index integer, p_version bigint,
                                      p_requested_by text, p_reason text) RETURNS text
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_catalog, pg_temp AS $$
DECLARE
    t text;
BEGIN
    SELECT x.text INTO t FROM escalated_chunks x
    WHERE x.doc_id = p_doc_id AND x.chunk_index = p_chunk_index AND x.version = p_version;
    IF NOT FOUND THEN
        RETURN NULL;
    END IF;
    INSERT INTO escalated_text_audit (doc_id, chunk_index, version, requested_by, reason)
    VALUES (p_doc_id, p_chunk_index, p_version, p_requested_by, p_reason);
    RETURN t;
END
$$;
-- +goose StatementEnd
REVOKE ALL ON FUNCTION reveal_escalated_text(text, integer, bigint, text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION reveal_escalated_text(text, integer, bigint, text, text) TO sluice_operator;

-- A replay's audit row is written before it dispatches; its dispatched
-- count, once, after.
-- +goose StatementBegin
CREATE FUNCTION record_replay_dispatched(p_replay_id text, p_dispatched integer) RETURNS void
LANGUAGE sql SECURITY DEFINER SET search_path = public, pg_catalog, pg_temp AS $$
    UPDATE replay_audit SET dispatched = p_dispatched
    WHERE replay_id = p_replay_id AND dispatched = 0 AND p_dispatched >= 0
$$;
-- +goose StatementEnd
REVOKE ALL ON FUNCTION record_replay_dispatched(text, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION record_replay_dispatched(text, integer) TO sluice_operator, sluice_console;

-- dead_letter_history is written by its trigger, as the owner, so that no
-- role needs INSERT on it and none can forge an event.
ALTER FUNCTION dead_letter_history_append() SECURITY DEFINER SET search_path = public, pg_catalog, pg_temp;
REVOKE ALL ON FUNCTION dead_letter_history_append() FROM PUBLIC;

-- Retention of dead_letter_history (dlq.Triage.PurgeHistory): at most
-- p_limit events, each older than p_now less its source's retention and
-- never newer than p_now less p_shortest, which must be positive.
-- +goose StatementBegin
CREATE FUNCTION purge_dead_letter_history(p_now timestamptz, p_sources text[], p_history_secs float8[],
                                          p_escalation_secs float8[], p_escalation_default float8,
                                          p_history_default float8, p_shortest float8, p_limit integer)
RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_catalog, pg_temp AS $$
DECLARE
    n bigint;
BEGIN
    IF p_shortest IS NULL OR p_shortest <= 0 OR p_limit IS NULL OR p_limit < 1 OR p_limit > 100000
       OR p_history_default <= 0 OR p_escalation_default <= 0 THEN
        RAISE EXCEPTION 'purge_dead_letter_history: retentions must be positive and the limit 1..100000'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    DELETE FROM dead_letter_history WHERE id IN (
        SELECT h.id FROM dead_letter_history h
        LEFT JOIN dead_letters d ON d.dead_letter_id = h.dead_letter_id
        LEFT JOIN unnest(p_sources, p_history_secs, p_escalation_secs) AS p(source_id, history_secs, escalation_secs)
               ON p.source_id = d.source_id
        WHERE h.at < p_now - make_interval(secs => p_shortest)
          AND h.at < p_now - make_interval(secs => greatest(p_shortest, CASE
              WHEN d.disposition = 'escalate' OR h.disposition = 'escalate' THEN coalesce(p.escalation_secs, p_escalation_default)
              ELSE coalesce(p.history_secs, p_history_default) END))
        ORDER BY h.id
        LIMIT p_limit);
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n;
END
$$;
-- +goose StatementEnd
REVOKE ALL ON FUNCTION purge_dead_letter_history(timestamptz, text[], float8[], float8[], float8, float8, float8, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION purge_dead_letter_history(timestamptz, text[], float8[], float8[], float8, float8, float8, integer) TO sluice_replayer;

-- sluice_producer: documents, manifest and runs of what it ingests; parks
-- escalations (outbox, payloads, escalated text); resolves superseded dead
-- letters; prunes the chunks of emptied documents.
GRANT SELECT, INSERT, UPDATE ON documents, ingest_manifest, ingest_runs TO sluice_producer;
GRANT SELECT (doc_id), DELETE ON chunk_embeddings, chunk_embeddings_previous TO sluice_producer;
GRANT SELECT, UPDATE (resolved_at, resolution) ON dead_letters TO sluice_producer;
GRANT SELECT (id), INSERT (subject, headers, payload) ON outbox TO sluice_producer;
GRANT INSERT ON dead_letter_payloads TO sluice_producer;
GRANT INSERT (doc_id, chunk_index, version, rule, text) ON escalated_chunks TO sluice_producer;

-- sluice_consumer: the ingest path, from a job to a stored vector or a
-- parked chunk.
GRANT SELECT, UPDATE ON documents, ingest_manifest, ingest_runs TO sluice_consumer;
GRANT SELECT, INSERT, UPDATE, DELETE ON chunk_embeddings, chunk_embeddings_previous TO sluice_consumer;
GRANT SELECT, UPDATE ON dead_letters TO sluice_consumer;
GRANT SELECT (id), INSERT (subject, headers, payload) ON outbox TO sluice_consumer;
GRANT INSERT ON dead_letter_payloads TO sluice_consumer;
GRANT INSERT (doc_id, chunk_index, version, rule, text) ON escalated_chunks TO sluice_consumer;

-- sluice_relay: publishes the outbox, and republishes owed chunk jobs.
GRANT SELECT, DELETE ON outbox TO sluice_relay;
GRANT UPDATE (published_at, attempts, next_attempt_at, last_error, refused_at) ON outbox TO sluice_relay;
GRANT SELECT ON documents, ingest_manifest TO sluice_relay;
GRANT UPDATE ON ingest_manifest TO sluice_relay;

-- sluice_replayer: the consumer's ingest path (it re-embeds), plus triage
-- (dead_letters), the alerter, and retention.
GRANT SELECT, UPDATE ON documents, ingest_manifest, ingest_runs TO sluice_replayer;
GRANT SELECT, INSERT, UPDATE, DELETE ON chunk_embeddings, chunk_embeddings_previous TO sluice_replayer;
GRANT SELECT, INSERT, UPDATE ON dead_letters TO sluice_replayer;
GRANT SELECT, INSERT, DELETE ON dead_letter_payloads TO sluice_replayer;
-- Retention locks the rows it deletes (FOR UPDATE needs an UPDATE grant).
GRANT UPDATE (created_at) ON dead_letter_payloads TO sluice_replayer;
GRANT SELECT (id, published_at), INSERT (subject, headers, payload) ON outbox TO sluice_replayer;
GRANT SELECT ON dead_letter_history TO sluice_replayer;
GRANT SELECT (doc_id, chunk_index, version, rule, created_at), INSERT (doc_id, chunk_index, version, rule, text),
    DELETE ON escalated_chunks TO sluice_replayer;

-- sluice_operator: reads everything but escalated text; replays,
-- corrects, reconciles and re-drives; ingests the fault drill's documents
-- (sluice drill) as a producer would; appends to replay_audit.
GRANT SELECT ON documents, ingest_manifest, ingest_runs, chunk_embeddings, chunk_embeddings_previous,
    dead_letters, dead_letter_payloads, outbox, replay_audit, dead_letter_history, escalated_text_audit TO sluice_operator;
GRANT UPDATE ON documents, ingest_manifest, ingest_runs, dead_letters TO sluice_operator;
GRANT INSERT ON documents, ingest_manifest, ingest_runs TO sluice_operator;
GRANT INSERT (subject, headers, payload) ON outbox TO sluice_operator;
GRANT INSERT ON dead_letter_payloads TO sluice_operator;
GRANT INSERT ON replay_audit TO sluice_operator;
GRANT SELECT (doc_id, chunk_index, version, rule, created_at) ON escalated_chunks TO sluice_operator;

-- sluice_console: reads what its pages show; replays, pauses, resumes and
-- corrects, appending to replay_audit.
GRANT SELECT ON documents, ingest_manifest, ingest_runs, dead_letters, replay_audit, dead_letter_history TO sluice_console;
GRANT UPDATE (replayed_at, replay_id) ON dead_letters TO sluice_console;
GRANT UPDATE (content_hash, job, updated_at) ON ingest_manifest TO sluice_console;
GRANT INSERT ON replay_audit TO sluice_console;
GRANT SELECT (doc_id, chunk_index, version, rule, created_at) ON escalated_chunks TO sluice_console;
GRANT SELECT (doc_id, chunk_index, content_hash) ON chunk_embeddings TO sluice_console;

-- +goose Down
REVOKE ALL ON ALL TABLES IN SCHEMA public FROM sluice_producer, sluice_consumer, sluice_relay, sluice_replayer,
    sluice_operator, sluice_console;
-- (Revoking a table privilege revokes its column privileges too.)
REVOKE USAGE ON SCHEMA public FROM sluice_producer, sluice_consumer, sluice_relay, sluice_replayer,
    sluice_operator, sluice_console;
DROP FUNCTION purge_dead_letter_history(timestamptz, text[], float8[], float8[], float8, float8, float8, integer);
ALTER FUNCTION dead_letter_history_append() SECURITY INVOKER RESET search_path;
GRANT EXECUTE ON FUNCTION dead_letter_history_append() TO PUBLIC;
DROP FUNCTION record_replay_dispatched(text, integer);
DROP FUNCTION reveal_escalated_text(text, integer, bigint, text, text);
DROP TABLE escalated_text_audit;
ALTER TABLE outbox DROP CONSTRAINT outbox_dead_letter;
DROP FUNCTION outbox_row_ok(text, jsonb, jsonb);
ALTER TABLE outbox DROP COLUMN refused_at;
ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT EXECUTE ON FUNCTIONS TO PUBLIC;
-- What migration 11 gave sluice_runtime.
GRANT USAGE ON SCHEMA public TO sluice_runtime;
GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO sluice_runtime;
GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO sluice_runtime;
REVOKE INSERT, UPDATE, DELETE ON goose_db_version, sluice_settings FROM sluice_runtime;
ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO sluice_runtime;
ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT USAGE, SELECT ON SEQUENCES TO sluice_runtime;
-- The roles stay: they belong to the cluster, and other databases may use
-- them.
