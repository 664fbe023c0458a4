-- The triage console: who asked for each replay, pause and resume; each
-- dead letter's history; and the indexes its list pages need to stay fast
-- at a million rows (keyset pagination and full-text search of
-- error_detail).

-- +goose Up
ALTER TABLE replay_audit
    ADD COLUMN action text NOT NULL DEFAULT 'replay' CHECK (action IN ('replay', 'pause', 'resume')),
    ADD COLUMN requested_by text,
    ADD COLUMN already_stored integer NOT NULL DEFAULT 0;
CREATE INDEX replay_audit_requested ON replay_audit (requested_at DESC);

-- One row per event in a dead letter's life: each failure recorded by
-- triage, each replay that marked it (and each unmark after a failed
-- dispatch), and its resolution. A trigger writes it, so that every writer
-- of dead_letters, present or future, leaves the same trail.
CREATE TABLE dead_letter_history (
    id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    dead_letter_id text NOT NULL,
    at             timestamptz NOT NULL DEFAULT now(),
    event          text NOT NULL CHECK (event IN ('failed', 'replayed', 'unmarked', 'resolved')),
    disposition    text,
    error_class    text,
    error_detail   text,
    stage          text,
    attempts       integer,
    replay_gen     integer,
    replay_id      text,
    outbox_id      bigint
);
CREATE INDEX dead_letter_history_letter ON dead_letter_history (dead_letter_id, id);
CREATE INDEX dead_letter_history_arrivals ON dead_letter_history (at) WHERE event = 'failed';

-- +goose StatementBegin
CREATE FUNCTION dead_letter_history_append() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' OR NEW.last_outbox_id IS DISTINCT FROM OLD.last_outbox_id THEN
        INSERT INTO dead_letter_history (dead_letter_id, at, event, disposition, error_class, error_detail,
                                         stage, attempts, replay_gen, outbox_id)
        VALUES (NEW.dead_letter_id, NEW.last_failed_at, 'failed', NEW.disposition, NEW.error_class,
                NEW.error_detail, NEW.stage, NEW.attempts, NEW.replay_gen, NEW.last_outbox_id);
    END IF;
    IF TG_OP = 'UPDATE' AND NEW.replay_id IS DISTINCT FROM OLD.replay_id THEN
        IF NEW.replay_id IS NOT NULL THEN
            INSERT INTO dead_letter_history (dead_letter_id, event, replay_gen, replay_id)
            VALUES (NEW.dead_letter_id, 'replayed', NEW.replay_gen + 1, NEW.replay_id);
        ELSE
            INSERT INTO dead_letter_history (dead_letter_id, event, replay_id)
            VALUES (NEW.dead_letter_id, 'unmarked', OLD.replay_id);
        END IF;
    END IF;
    IF NEW.resolved_at IS NOT NULL AND (TG_OP = 'INSERT' OR OLD.resolved_at IS NULL) THEN
        INSERT INTO dead_letter_history (dead_letter_id, at, event, replay_gen, replay_id)
        VALUES (NEW.dead_letter_id, NEW.resolved_at, 'resolved', NEW.replay_gen, NEW.replay_id);
    END IF;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

CREATE TRIGGER dead_letter_history AFTER INSERT OR UPDATE ON dead_letters
    FOR EACH ROW EXECUTE FUNCTION dead_letter_history_append();

-- Keyset pagination: newest and oldest first walk this index either way;
-- most attempts first walks the second.
CREATE INDEX dead_letters_recent ON dead_letters (last_failed_at, dead_letter_id);
CREATE INDEX dead_letters_attempts ON dead_letters (attempts, last_failed_at, dead_letter_id);
CREATE INDEX dead_letters_run ON dead_letters (run_id);
-- The list's stage choices walk it (a loose index scan).
CREATE INDEX dead_letters_stage ON dead_letters (stage);
CREATE INDEX dead_letters_detail_search ON dead_letters
    USING gin (to_tsvector('simple', coalesce(error_detail, '')));

-- +goose Down
DROP INDEX dead_letters_detail_search;
DROP INDEX dead_letters_stage;
DROP INDEX dead_letters_run;
DROP INDEX dead_letters_attempts;
DROP INDEX dead_letters_recent;
DROP TRIGGER dead_letter_history ON dead_letters;
DROP FUNCTION dead_letter_history_append();
DROP TABLE dead_letter_history;
DROP INDEX replay_audit_requested;
ALTER TABLE replay_audit DROP COLUMN already_stored, DROP COLUMN requested_by, DROP COLUMN action;
