-- The console shows an operator the file a dead letter keeps (a scan
-- parked below its OCR bar, a file that could not be read), beside the
-- dead letter, so that a person keying its text in reads the page the
-- scanner saw. The console's role may read the bytes; the console shows
-- them to operators only, as it does a payload's text, and retention
-- purges them with the payload.

-- +goose Up
GRANT SELECT (bytes) ON file_bytes TO sluice_console;

-- +goose Down
REVOKE SELECT (bytes) ON file_bytes FROM sluice_console;
