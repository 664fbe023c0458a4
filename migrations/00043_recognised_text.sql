-- A scan parked below its OCR bar keeps, beside its bytes, the text OCR
-- recognised in it, so that the person keying its text in edits that
-- text rather than typing from nothing. It lives in the parked file's
-- reference, so retention and erasure remove it with the reference; the
-- console's role reads it (the console shows it to operators only).

-- +goose Up
ALTER TABLE file_bytes_refs ADD COLUMN recognised_text text;
GRANT UPDATE (recognised_text) ON file_bytes_refs TO sluice_producer, sluice_operator;

-- +goose Down
REVOKE UPDATE (recognised_text) ON file_bytes_refs FROM sluice_producer, sluice_operator;
ALTER TABLE file_bytes_refs DROP COLUMN recognised_text;
