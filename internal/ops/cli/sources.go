package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sluicehq/sluice/internal/content/pgtable"
	"github.com/sluicehq/sluice/internal/ops/reconcile"
	"github.com/sluicehq/sluice/internal/store/sources"
	"github.com/sluicehq/sluice/internal/store/sources/view"
)

func sourcesCommands() map[string]command {
	return map[string]command{
		"add": {"declare a source: add table NAME --dsn env:VAR --table schema.t --id col --text col1,col2 [--meta cols] [--filter SQL]", runSourcesAdd},
		"rm":  {"forget a declared source and remove its triggers: rm NAME", runSourcesRemove},
		"ls":  {"every source: declared, or seen in documents, with kind, mode, last sync, lag and document counts", runSourcesList},
	}
}

func runSources(ctx context.Context, env Env, args []string) error {
	return subcommand(ctx, env, "sources", sourcesCommands(), args)
}

// tableConfig is the pgtable configuration of a declared table source.
func tableConfig(name string, t sources.Table) pgtable.Config {
	return pgtable.Config{Source: name, Table: t.Table, ID: t.ID, Text: t.Text, Meta: t.Meta, Filter: t.Filter}
}

// openApp connects to a table source's application database, its DSN
// reference resolved in the command's environment.
func openApp(ctx context.Context, env Env, t sources.Table) (*pgxpool.Pool, error) {
	dsn, err := pgtable.ResolveDSN(t.DSN, lookupOrNone(env))
	if err != nil {
		return nil, usageErr("%v", err)
	}
	return openPool(ctx, dsn)
}

func runSourcesAdd(ctx context.Context, env Env, args []string) error {
	if len(args) < 2 || args[0] != "table" {
		return usageErr("sluice sources add table NAME --dsn env:VAR --table schema.t --id col --text col1,col2: only table sources are declared; directories and JSONL are named on the producer's command line")
	}
	name := args[1]
	var c conn
	var t sources.Table
	l := newLoader(env, "sources add table", &c, false)
	l.String(&t.DSN, "dsn", "", "", "the application database: env:VAR (an environment variable of the producer and of this command) or file:PATH; a DSN holding a password is refused")
	l.String(&t.Table, "table", "", "", "the table, schema-qualified: public.articles")
	l.String(&t.ID, "id", "", "", "its primary key column, the documents' native id")
	l.Strings(&t.Text, "text", "", "the columns whose values are the document's text, joined by blank lines")
	l.Strings(&t.Meta, "meta", "", "the columns copied into the document's metadata")
	l.String(&t.Filter, "filter", "", "", "an SQL condition on the table's columns: only rows matching it are documents")
	rest, err := parse(l, args[2:])
	if err != nil {
		return err
	}
	if err := noArgs("sources add table", rest); err != nil {
		return err
	}
	if err := checkDSNReference(t.DSN); err != nil {
		return err
	}
	cfg := tableConfig(name, t)
	if err := cfg.Validate(); err != nil {
		return usageErr("%v", err)
	}
	pool, err := openPool(ctx, c.DatabaseURL)
	if err != nil {
		return err
	}
	defer pool.Close()
	if _, err := sources.Get(ctx, pool, name); err == nil {
		return usageErr("source %s is already declared: remove it first with sluice sources rm %s", name, name)
	}
	app, err := openApp(ctx, env, t)
	if err != nil {
		return err
	}
	defer app.Close()
	if err := pgtable.Install(ctx, app, cfg); err != nil {
		return err
	}
	if err := sources.Add(ctx, pool, name, sources.KindTable, t); err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "declared table source %s (%s); its triggers queue every change. Load and follow it with: producer --table-source %s --follow\n", name, t.Table, name)
	return nil
}

// checkDSNReference refuses a DSN that would store a password in
// Sluice's database.
func checkDSNReference(ref string) error {
	if ref == "" || strings.HasPrefix(ref, "env:") || strings.HasPrefix(ref, "file:") {
		return nil
	}
	cfg, err := pgx.ParseConfig(ref)
	if err != nil {
		return usageErr("--dsn: %v", err)
	}
	if cfg.Password != "" {
		return usageErr("--dsn holds a password, which would be stored in the sources table: put the DSN in an environment variable and give --dsn env:VAR, or in a file and give --dsn file:PATH")
	}
	return nil
}

func runSourcesRemove(ctx context.Context, env Env, args []string) error {
	var c conn
	l := newLoader(env, "sources rm", &c, false)
	rest, err := parse(l, args)
	if err != nil {
		return err
	}
	if len(rest) != 1 {
		return usageErr("sluice sources rm NAME")
	}
	name := rest[0]
	pool, err := openPool(ctx, c.DatabaseURL)
	if err != nil {
		return err
	}
	defer pool.Close()
	s, err := sources.Get(ctx, pool, name)
	if errors.Is(err, sources.ErrNotFound) {
		return usageErr("%v: see sluice sources ls", err)
	}
	if err != nil {
		return err
	}
	if s.Kind == sources.KindTable {
		t, err := sources.GetTable(ctx, pool, name)
		if err != nil {
			return err
		}
		app, err := openApp(ctx, env, t)
		if err != nil {
			return err
		}
		defer app.Close()
		if err := pgtable.Uninstall(ctx, app, tableConfig(name, t)); err != nil {
			return err
		}
	}
	if err := sources.Remove(ctx, pool, name); err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "removed source %s; its documents stay in the index (delete them with sluice docs delete --source %s)\n", name, name)
	return nil
}

func runSourcesList(ctx context.Context, env Env, args []string) error {
	var c conn
	l := newLoader(env, "sources ls", &c, false)
	rest, err := parse(l, args)
	if err != nil {
		return err
	}
	if err := noArgs("sources ls", rest); err != nil {
		return err
	}
	pool, err := openPool(ctx, c.DatabaseURL)
	if err != nil {
		return err
	}
	defer pool.Close()
	rows, err := view.List(ctx, pool)
	if err != nil {
		return err
	}
	if c.JSON {
		return printJSON(env.Stdout, struct {
			Sources []view.Source `json:"sources"`
		}{rows})
	}
	if len(rows) == 0 {
		fmt.Fprintln(env.Stderr, "no sources: declare a table with sluice sources add, or run the producer over files")
		return nil
	}
	w := newTable(env.Stdout)
	fmt.Fprintln(w, "SOURCE\tKIND\tMODE\tLAST SYNC\tLAG\tDOCUMENTS\tREADY\tDELETED\tLAST ERROR")
	for _, r := range rows {
		lag := "-"
		if r.LagSeconds != nil {
			lag = (time.Duration(*r.LagSeconds * float64(time.Second))).Round(time.Millisecond).String()
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%d\t%d\t%d\t%s\n", r.Name, r.Kind, r.Mode, tableTimePtr(r.LastSyncAt), lag, r.Documents, r.Ready, r.Deleted, cmp.Or(r.LastError, "-"))
	}
	return w.Flush()
}

// reconcileTable is `sluice reconcile --table-source NAME`.
func reconcileTable(ctx context.Context, env Env, c *conn, name string) error {
	pool, err := openPool(ctx, c.DatabaseURL)
	if err != nil {
		return &ExitError{Code: reconcileUnchecked, Err: err}
	}
	defer pool.Close()
	t, err := sources.GetTable(ctx, pool, name)
	if err != nil {
		return &ExitError{Code: reconcileUnchecked, Err: fmt.Errorf("reconcile could not check: %w", err)}
	}
	app, err := openApp(ctx, env, t)
	if err != nil {
		return &ExitError{Code: reconcileUnchecked, Err: fmt.Errorf("reconcile could not check: %w", err)}
	}
	defer app.Close()
	rep, err := reconcile.CompareTable(ctx, pool, app, tableConfig(name, t))
	if err != nil {
		return &ExitError{Code: reconcileUnchecked, Err: fmt.Errorf("reconcile could not check: %w", err)}
	}
	if c.JSON {
		_ = printJSON(env.Stdout, rep)
	} else {
		fmt.Fprintf(env.Stdout, "table source %s: %d rows, %d documents; missing %d, extra %d; changes still queued %d\n",
			rep.Source, rep.Rows, rep.Documents, rep.Missing, rep.Extra, rep.Pending)
		if len(rep.MissingIDs) > 0 {
			fmt.Fprintf(env.Stdout, "  missing: %s\n", strings.Join(rep.MissingIDs, " "))
		}
		if len(rep.ExtraIDs) > 0 {
			fmt.Fprintf(env.Stdout, "  extra: %s\n", strings.Join(rep.ExtraIDs, " "))
		}
	}
	if !rep.OK() {
		return &ExitError{Code: reconcileProblems, Err: fmt.Errorf("reconcile found problems: table source %s has %d rows missing from the index and %d documents not in the table (run producer --table-source %s)", name, rep.Missing, rep.Extra, name)}
	}
	return nil
}
