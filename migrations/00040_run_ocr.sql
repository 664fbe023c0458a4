-- What OCR did in a run: how many of the files it read or parked were
-- scans or images read by OCR, how many of them were parked below their
-- source's bar (ocr_low_confidence, waiting for a person), and how many
-- were stored from keyed text, so that `sluice runs show` can say so.
-- They are NULL for runs recorded before this migration.
--
-- The columns need no grants of their own: ingest_runs already has them
-- (00020_service_roles.sql), the producer's UPDATE and the console's and
-- the operator's SELECT included.

-- +goose Up
ALTER TABLE ingest_runs
    ADD COLUMN files_ocr integer CHECK (files_ocr >= 0),
    ADD COLUMN files_ocr_low integer CHECK (files_ocr_low >= 0),
    ADD COLUMN files_keyed integer CHECK (files_keyed >= 0);

-- +goose Down
ALTER TABLE ingest_runs DROP COLUMN files_keyed, DROP COLUMN files_ocr_low, DROP COLUMN files_ocr;
