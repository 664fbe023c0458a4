package bench

import (
	"context"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/jackc/pgx/v5"

	"github.com/sluicehq/sluice/internal/dev/localenv"
)

// Profiling PostgreSQL: with --profile-dir, the server is restarted with
// pg_stat_statements loaded, and each profiled run writes the statements
// that took its database's time. PostgreSQL is the largest CPU user of a
// pipeline run, and pprof cannot see inside it.

// enableStatements loads pg_stat_statements, which takes a restart.
func (in *infra) enableStatements(ctx context.Context) error {
	if err := localenv.AdminExec(ctx, in.pg.URL, `ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements'`); err != nil {
		return err
	}
	if err := in.pg.Restart(ctx); err != nil {
		return err
	}
	// Planning is tracked too: a statement re-planned at every execution
	// costs PostgreSQL CPU that its execution time does not show.
	for _, stmt := range []string{
		`CREATE EXTENSION IF NOT EXISTS pg_stat_statements`,
		`ALTER SYSTEM SET pg_stat_statements.track_planning = on`,
		`SELECT pg_reload_conf()`,
	} {
		if err := localenv.AdminExec(ctx, in.pg.URL, stmt); err != nil {
			return err
		}
	}
	return nil
}

// resetStatements clears the statistics before a profiled run.
func (in *infra) resetStatements(ctx context.Context) error {
	return localenv.AdminExec(ctx, in.pg.URL, `SELECT pg_stat_statements_reset()`)
}

// writeStatements writes the statements run against db, by total time,
// with how often and how long they were planned, the buffers they touched
// and the WAL they wrote, to path. The view lives where the extension was created: the server's
// "postgres" database.
func (in *infra) writeStatements(ctx context.Context, db *database, path string) error {
	conn, err := pgx.Connect(ctx, in.pg.URL)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	rows, err := conn.Query(ctx, `
		SELECT s.calls, s.plans, s.total_plan_time, s.total_exec_time, s.total_exec_time / greatest(s.calls, 1), s.rows,
		       s.shared_blks_hit + s.shared_blks_read, s.wal_bytes::int8 / 1024, regexp_replace(left(s.query, 160), '\s+', ' ', 'g')
		FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid
		WHERE d.datname = $1
		ORDER BY s.total_exec_time DESC LIMIT 20`, db.name)
	if err != nil {
		return fmt.Errorf("read pg_stat_statements: %w", err)
	}
	defer rows.Close()
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "calls\tplans\tplan ms\ttotal ms\tmean ms\trows\tblocks\tWAL KiB\tquery")
	for rows.Next() {
		var calls, plans, nrows, blocks, wal int64
		var planMs, total, mean float64
		var query string
		if err := rows.Scan(&calls, &plans, &planMs, &total, &mean, &nrows, &blocks, &wal, &query); err != nil {
			return err
		}
		fmt.Fprintf(tw, "%d\t%d\t%.0f\t%.0f\t%.3f\t%d\t%d\t%d\t%s\n", calls, plans, planMs, total, mean, nrows, blocks, wal, query)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}
