-- Self-healing (DESIGN §7.7, §7.8): the manifest is the producer's outbox,
-- so it records whether each job's publish was confirmed; the outbox backs
-- off per row, so one row can never block the others; and dead letters
-- say why they were resolved.

-- +goose Up
-- published_at is now NULL until JetStream confirmed the publish (PubAck).
-- publish_seq is the stream sequence the PubAck named, so a republish can
-- verify the message is really there. publish_gen numbers republishes: a
-- message that is gone is published again under a new Nats-Msg-Id, which
-- the duplicate window cannot swallow.
ALTER TABLE ingest_manifest
    ADD COLUMN publish_seq bigint,
    ADD COLUMN publish_gen integer NOT NULL DEFAULT 0;

CREATE INDEX ingest_manifest_unconfirmed ON ingest_manifest (doc_id, chunk_index)
    WHERE status = 'pending' AND published_at IS NULL;

ALTER TABLE outbox
    ADD COLUMN attempts        integer NOT NULL DEFAULT 0,
    ADD COLUMN next_attempt_at timestamptz,
    ADD COLUMN last_error      text;

DROP INDEX outbox_unpublished;
CREATE INDEX outbox_unpublished ON outbox (id) WHERE published_at IS NULL;

-- Dead letters too large for the DLQ stream travel by reference: the
-- relay publishes the envelope without the payload and triage reads the
-- payload from here.
CREATE TABLE dead_letter_payloads (
    outbox_id  bigint PRIMARY KEY,
    payload    bytea NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);

ALTER TABLE dead_letters ADD COLUMN resolution text;

-- +goose Down
ALTER TABLE dead_letters DROP COLUMN resolution;
DROP TABLE dead_letter_payloads;
DROP INDEX outbox_unpublished;
CREATE INDEX outbox_unpublished ON outbox (created_at) WHERE published_at IS NULL;
ALTER TABLE outbox DROP COLUMN attempts, DROP COLUMN next_attempt_at, DROP COLUMN last_error;
DROP INDEX ingest_manifest_unconfirmed;
ALTER TABLE ingest_manifest DROP COLUMN publish_seq, DROP COLUMN publish_gen;
