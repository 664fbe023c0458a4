package pgtable

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Channel is the channel the triggers notify, with the source's name as
// the payload, when they queue a change.
const Channel = "sluice_sync"

// schemaSQL creates the queue and the trigger function, shared by every
// table source of the database. The function is SECURITY DEFINER so that
// the application's roles need no grant on the queue.
const schemaSQL = `
CREATE SCHEMA IF NOT EXISTS sluice_sync;
CREATE TABLE IF NOT EXISTS sluice_sync.queue (
    seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    source text NOT NULL,
    key text,
    op text NOT NULL CHECK (op IN ('upsert', 'delete', 'reload')),
    queued_at timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX IF NOT EXISTS queue_source_key ON sluice_sync.queue (source, key);
CREATE OR REPLACE FUNCTION sluice_sync.enqueue() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
    src text := TG_ARGV[0];
    col text := TG_ARGV[1];
    old_key text;
    new_key text;
BEGIN
    IF TG_OP = 'TRUNCATE' THEN
        INSERT INTO sluice_sync.queue (source, key, op) VALUES (src, NULL, 'reload');
    ELSE
        IF TG_OP IN ('UPDATE', 'DELETE') THEN old_key := to_jsonb(OLD) ->> col; END IF;
        IF TG_OP IN ('INSERT', 'UPDATE') THEN new_key := to_jsonb(NEW) ->> col; END IF;
        IF old_key IS NOT NULL AND old_key IS DISTINCT FROM new_key THEN
            INSERT INTO sluice_sync.queue (source, key, op) VALUES (src, old_key, 'delete');
        END IF;
        IF new_key IS NOT NULL THEN
            INSERT INTO sluice_sync.queue (source, key, op) VALUES (src, new_key, 'upsert');
        END IF;
    END IF;
    PERFORM pg_notify('` + Channel + `', src);
    RETURN NULL;
END
$fn$;
`

// Install puts the queue and the source's triggers in the application
// database pool is connected to, in one transaction. The first install
// of a source also queues a full reload, so that its first drain is the
// consistent snapshot of the table that the triggers' changes follow.
// Installing again changes nothing.
func Install(ctx context.Context, pool *pgxpool.Pool, cfg Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		// Concurrent installs would race on CREATE ... IF NOT EXISTS.
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('sluice_sync'))`); err != nil {
			return fmt.Errorf("install table source %s: %w", cfg.Source, err)
		}
		if _, err := tx.Exec(ctx, schemaSQL); err != nil {
			return fmt.Errorf("install table source %s: the queue: %w", cfg.Source, err)
		}
		var exists bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_trigger WHERE tgrelid = $1::regclass AND tgname = $2)`,
			cfg.ident(), "sluice_sync_"+cfg.Source+"_row").Scan(&exists); err != nil {
			return fmt.Errorf("install table source %s: table %s: %w", cfg.Source, cfg.Table, err)
		}
		if exists {
			return nil
		}
		if err := checkColumns(ctx, tx, cfg); err != nil {
			return err
		}
		args := fmt.Sprintf("EXECUTE FUNCTION sluice_sync.enqueue(%s, %s)", quoteLiteral(cfg.Source), quoteLiteral(cfg.ID))
		for _, stmt := range []string{
			"CREATE TRIGGER " + cfg.triggerName("row") + " AFTER INSERT OR UPDATE OR DELETE ON " + cfg.ident() + " FOR EACH ROW " + args,
			"CREATE TRIGGER " + cfg.triggerName("truncate") + " AFTER TRUNCATE ON " + cfg.ident() + " FOR EACH STATEMENT " + args,
			"INSERT INTO sluice_sync.queue (source, key, op) VALUES (" + quoteLiteral(cfg.Source) + ", NULL, 'reload')",
		} {
			if _, err := tx.Exec(ctx, stmt); err != nil {
				return fmt.Errorf("install table source %s: %w", cfg.Source, err)
			}
		}
		return nil
	})
}

// checkColumns fails when a named column is not in the table or the
// filter is not a valid condition on it, naming what to fix.
func checkColumns(ctx context.Context, tx pgx.Tx, cfg Config) error {
	cols := append(append([]string{cfg.ID}, cfg.Text...), cfg.Meta...)
	for _, c := range cols {
		var ok bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = $1::regclass AND attname = $2 AND attnum > 0 AND NOT attisdropped)`,
			cfg.ident(), c).Scan(&ok); err != nil {
			return fmt.Errorf("table source %s: %w", cfg.Source, err)
		}
		if !ok {
			return fmt.Errorf("table source %s: table %s has no column %q: name one of its columns", cfg.Source, cfg.Table, c)
		}
	}
	if _, err := tx.Exec(ctx, "SELECT 1 FROM "+cfg.ident()+" WHERE "+cfg.filter()+" LIMIT 0"); err != nil {
		return fmt.Errorf("table source %s: --filter %q is not a condition on %s: %w", cfg.Source, cfg.Filter, cfg.Table, err)
	}
	return nil
}

// Uninstall drops the source's triggers and its queued changes; the
// queue, which other sources may share, stays.
func Uninstall(ctx context.Context, pool *pgxpool.Pool, cfg Config) error {
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		for _, stmt := range []string{
			"DROP TRIGGER IF EXISTS " + cfg.triggerName("row") + " ON " + cfg.ident(),
			"DROP TRIGGER IF EXISTS " + cfg.triggerName("truncate") + " ON " + cfg.ident(),
		} {
			if _, err := tx.Exec(ctx, stmt); err != nil {
				return fmt.Errorf("uninstall table source %s: %w", cfg.Source, err)
			}
		}
		var queue bool
		if err := tx.QueryRow(ctx, `SELECT to_regclass('sluice_sync.queue') IS NOT NULL`).Scan(&queue); err != nil || !queue {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM sluice_sync.queue WHERE source = $1`, cfg.Source); err != nil {
			return fmt.Errorf("uninstall table source %s: %w", cfg.Source, err)
		}
		return nil
	})
}

// Pending counts the source's queued changes.
func Pending(ctx context.Context, pool *pgxpool.Pool, source string) (int64, error) {
	var n int64
	err := pool.QueryRow(ctx, `SELECT count(*) FROM sluice_sync.queue WHERE source = $1`, source).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("count queued changes of %s: %w", source, err)
	}
	return n, nil
}

func quoteLiteral(s string) string {
	out := []byte{'\''}
	for i := 0; i < len(s); i++ {
		if s[i] == '\'' {
			out = append(out, '\'')
		}
		out = append(out, s[i])
	}
	return string(append(out, '\''))
}

// Keys lists the native ids of the table's rows that match the filter:
// the documents the source should have.
func Keys(ctx context.Context, pool *pgxpool.Pool, cfg Config) ([]string, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	rows, err := pool.Query(ctx, `SELECT to_jsonb(t) ->> `+quoteLiteral(cfg.ID)+` FROM (SELECT * FROM `+cfg.ident()+` WHERE `+cfg.filter()+`) t`)
	if err != nil {
		return nil, fmt.Errorf("table source %s: read %s: %w", cfg.Source, cfg.Table, err)
	}
	keys, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("table source %s: read %s: %w", cfg.Source, cfg.Table, err)
	}
	return keys, nil
}
