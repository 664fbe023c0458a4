-- text_claims holds the texts that some process is embedding now, per
-- index generation (issue 30: never pay twice for the same text). A
-- pipeline claims the texts whose vectors are not stored before it
-- sends them to the provider, and releases them once their batch has
-- committed or given up. Another process that needs one of those texts
-- meanwhile waits for the stored vector instead of paying for the text
-- again. A claim holds no text and no document, only the text's SHA-256
-- and its claimer (host:pid:random). It outlives its batch only when its
-- process dies; it is then taken over once older than the taker's time
-- to live, so a dead claimer delays its texts' other chunks and never
-- loses one. Pipelines sweep claims past their time to live, and
-- `sluice reconcile` reports (and with --redrive deletes) any older than
-- an hour.
--
-- The table is unlogged: after a crash PostgreSQL empties it, which only
-- forgets who was embedding what. Nothing reads it for correctness.

-- +goose Up
CREATE UNLOGGED TABLE text_claims (
    generation integer NOT NULL,
    text_hash bytea NOT NULL CHECK (octet_length(text_hash) = 32),
    claimed_by text NOT NULL,
    claimed_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (generation, text_hash)
);

-- The pipelines (consumer and dlq-replayer) claim, release and sweep;
-- the operator's reconcile reads them and deletes the stale ones.
GRANT SELECT, INSERT, UPDATE, DELETE ON text_claims TO sluice_consumer, sluice_replayer;
GRANT SELECT, DELETE ON text_claims TO sluice_operator;

-- +goose Down
DROP TABLE text_claims;
