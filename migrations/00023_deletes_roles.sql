-- Deleting documents (schema 22) under the per-service roles (schema
-- 20). A delete is recorded and its text erased by the producer (sync
-- runs and JSONL tombstones) and by the operator (sluice docs delete,
-- reconcile --redrive finishing an erasure), in one transaction
-- (internal/erase); every other role only reads the audit.
--
-- The erasing roles may delete a document's rows from the tables that
-- hold its text, and read only the key columns that find them. Outbox
-- rows written before schema 22 hold a dead letter's payload; they are
-- blanked through erase_outbox_payloads, run as the owner, so that no
-- role below it reads outbox payloads to find them.

-- +goose Up
GRANT SELECT, INSERT ON deletion_requests, document_deletions TO sluice_producer, sluice_operator;
GRANT SELECT ON deletion_requests, document_deletions TO sluice_consumer, sluice_replayer, sluice_console, sluice_readonly;

GRANT SELECT (doc_id), DELETE ON chunk_embeddings, chunk_embeddings_previous TO sluice_producer, sluice_operator;
GRANT SELECT (doc_id), DELETE ON escalated_chunks TO sluice_producer, sluice_operator;
GRANT SELECT (doc_id, outbox_id), DELETE ON dead_letter_payloads TO sluice_producer, sluice_operator;
GRANT SELECT (dead_letter_id, outbox_id) ON dead_letter_history TO sluice_producer;
GRANT UPDATE (payload, payload_purged_at, resolution, resolved_at) ON dead_letters TO sluice_producer;

-- +goose StatementBegin
CREATE FUNCTION erase_outbox_payloads(p_doc_ids text[]) RETURNS bigint
LANGUAGE sql SECURITY DEFINER SET search_path = public, pg_catalog, pg_temp AS $$
    WITH blanked AS (
        UPDATE outbox SET payload = jsonb_set(payload, '{payload}', '""')
        WHERE (payload->>'doc_id') = ANY(p_doc_ids) AND coalesce(payload->>'payload', '') <> ''
        RETURNING 1)
    SELECT count(*) FROM blanked
$$;
-- +goose StatementEnd
REVOKE ALL ON FUNCTION erase_outbox_payloads(text[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION erase_outbox_payloads(text[]) TO sluice_producer, sluice_operator;

-- +goose Down
DROP FUNCTION erase_outbox_payloads(text[]);
REVOKE UPDATE (payload, payload_purged_at, resolution, resolved_at) ON dead_letters FROM sluice_producer;
GRANT UPDATE (resolved_at, resolution) ON dead_letters TO sluice_producer;
REVOKE SELECT (dead_letter_id, outbox_id) ON dead_letter_history FROM sluice_producer;
REVOKE SELECT (doc_id, outbox_id), DELETE ON dead_letter_payloads FROM sluice_producer, sluice_operator;
REVOKE SELECT (doc_id), DELETE ON escalated_chunks FROM sluice_producer;
REVOKE DELETE ON escalated_chunks FROM sluice_operator;
REVOKE DELETE ON chunk_embeddings, chunk_embeddings_previous FROM sluice_operator;
REVOKE ALL ON deletion_requests, document_deletions FROM sluice_producer, sluice_operator, sluice_consumer,
    sluice_replayer, sluice_console, sluice_readonly;
