-- An index generation's mode (issue 33): live, its backfill embedded
-- through the provider's live endpoint, or batch, through its Batch API
-- (bulk mode's ledger, schema 29), at half the price, outside the live
-- rate limits, within the provider's 24-hour window. The operator sets
-- it when it creates the generation (sluice index create --mode), under
-- its INSERT grant on index_generations; nothing changes it after.

-- +goose Up
ALTER TABLE index_generations
    ADD COLUMN mode text NOT NULL DEFAULT 'live' CHECK (mode IN ('live', 'batch'));

-- +goose Down
ALTER TABLE index_generations DROP COLUMN mode;
