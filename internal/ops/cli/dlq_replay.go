package cli

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/rs/zerolog"

	"github.com/sluicehq/sluice/internal/failure/replay"
	"github.com/sluicehq/sluice/internal/store/deadletter"
)

func runDLQReplay(ctx context.Context, env Env, args []string) error {
	var c conn
	var scope replay.Scope
	var since, until, reason, rate, id, stage string
	var execute bool
	var pf parkedFlags
	l := newLoader(env, "dlq replay", &c, true)
	pf.registerReplay(l, &id, &stage)
	l.String(&scope.Source, "source", "", "", "replay dead letters of this source")
	l.String(&scope.ErrorClass, "error-class", "", "", "replay dead letters of this error class")
	l.String(&scope.Run, "run", "", "", "replay dead letters of this ingest run")
	l.String(&since, "since", "", "", "failed at or after: RFC 3339 time, or a duration ago (24h)")
	l.String(&until, "until", "", "", "failed before: RFC 3339 time, or a duration ago")
	l.Int(&scope.Limit, "limit", "", replay.DefaultLimit, "replay at most this many")
	l.String(&reason, "reason", "", "", "why (recorded in replay_audit; required with --execute)")
	l.Bool(&scope.IncludeReplayed, "include-replayed", "", false, "also take dead letters that failed again after a replay")
	l.String(&rate, "rate", "", "", "publish at most this many replay jobs: N/s or N/m (default: unlimited)")
	l.Bool(&execute, "execute", "", false, "dispatch the replay; without it, only preview")
	if _, err := parse(l, args); err != nil {
		return err
	}
	var err error
	if scope.RatePerSecond, err = replay.ParseRate(rate); err != nil {
		return usageErr("--rate: %v", err)
	}

	if err := parseWindow(&scope, since, until); err != nil {
		return err
	}
	if id != "" || stage != "" {
		return runParkedReplay(ctx, env, &c, &pf, scope, id, stage, reason, execute)
	}
	switch {
	case pf.opts.OCR.Accept:
		return usageErr("--accept-ocr stores a parked scan's OCR text: name its dead letter with --id, or --stage produce --error-class ocr_low_confidence")
	case !scope.Narrow():
		return usageErr("name a scope: at least one of --source, --error-class, --run, --since")
	case scope.Limit < 1 || scope.Limit > replay.MaxLimit:
		return usageErr("--limit must be 1..%d", replay.MaxLimit)
	case execute && reason == "":
		return usageErr("--execute needs --reason: say why, for the audit trail")
	}
	pool, err := openPool(ctx, c.DatabaseURL)
	if err != nil {
		return err
	}
	defer pool.Close()
	var preview *replay.Preview
	if execute {
		preview, err = executeReplay(ctx, pool, &c, scope, reason, cliPrincipal(env))
	} else {
		preview, err = replay.DryRun(ctx, pool, scope, cliPrincipal(env))
	}
	if preview != nil {
		if c.JSON {
			_ = printJSON(env.Stdout, preview)
		} else {
			printPreview(env, preview)
		}
	}
	return err
}

// parseWindow reads --since and --until into scope.
func parseWindow(scope *replay.Scope, since, until string) error {
	var err error
	if scope.Since, err = parseWhen(since, time.Now()); err != nil {
		return usageErr("--since: %v", err)
	}
	if scope.Until, err = parseWhen(until, time.Now()); err != nil {
		return usageErr("--until: %v", err)
	}
	return nil
}

// runParkedReplay replays the parked file id, or with --stage produce
// every one scope selects.
func runParkedReplay(ctx context.Context, env Env, c *conn, pf *parkedFlags, scope replay.Scope, id, stage, reason string, execute bool) error {
	switch {
	case stage != "" && stage != deadletter.StageProduce:
		return usageErr("--stage %s: only %s (parked files) is replayed by stage; replay chunks by --source, --error-class, --run or --since", stage, deadletter.StageProduce)
	case id != "" && stage != "":
		return usageErr("give --id or --stage, not both")
	case stage != "" && !scope.Narrow():
		return usageErr("name a scope: at least one of --source, --error-class, --run, --since")
	case execute && reason == "":
		return usageErr("--execute needs --reason: say why, for the audit trail")
	}
	opts, formats, err := pf.options(pf.chunking(), cliPrincipal(env), reason)
	if err != nil {
		return err
	}
	pool, err := openPool(ctx, c.DatabaseURL)
	if err != nil {
		return err
	}
	defer pool.Close()
	ids := []string{id}
	if stage != "" {
		if ids, err = deadletter.ParkedFiles(ctx, pool, scope.Filter, scope.Limit); err != nil {
			return err
		}
		if len(ids) == 0 {
			fmt.Fprintln(env.Stdout, "no open parked file matches")
			return nil
		}
	}
	return replayParked(ctx, env, c, pool, ids, opts, formats, execute)
}

// parseWhen reads an RFC 3339 time or a duration meaning "that long ago".
func parseWhen(s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	return time.Time{}, fmt.Errorf("%q is neither an RFC 3339 time (2026-01-02T15:04:05Z) nor a duration (24h)", s)
}

// executeReplay connects to NATS and runs the replay.
func executeReplay(ctx context.Context, pool *pgxpool.Pool, c *conn, scope replay.Scope, reason, by string) (*replay.Preview, error) {
	nc, js, err := c.connectNATS("sluice-cli", zerolog.Nop())
	if err != nil {
		return nil, err
	}
	defer nc.Close()
	return replay.Execute(ctx, pool, js, scope, reason, by)
}

// cliPrincipal names who runs the CLI, for replay_audit.requested_by.
func cliPrincipal(env Env) string {
	if u, ok := lookupOrNone(env)("USER"); ok && u != "" {
		return "cli:" + u
	}
	return "cli"
}

func printPreview(env Env, p *replay.Preview) {
	w := env.Stdout
	if p.DryRun {
		fmt.Fprintf(w, "DRY RUN %s: nothing was marked or dispatched; add --execute --reason \"...\" to replay.\n", p.ReplayID)
	} else {
		fmt.Fprintf(w, "replay %s\n", p.ReplayID)
	}
	fmt.Fprintf(w, "selected %d (limit %d); %d already have a vector with the same content; %d cannot be replayed (no job payload)\n",
		p.Selected, p.Scope.Limit, p.AlreadyStored, p.NotReplayable)
	if p.ExcludedReplayed > 0 {
		fmt.Fprintf(w, "excluded %d already replayed once (add --include-replayed to take them)\n", p.ExcludedReplayed)
	}
	if p.ExcludedEscalated > 0 {
		fmt.Fprintf(w, "excluded %d escalations (never replayed)\n", p.ExcludedEscalated)
	}
	printCounts(w, "error class", p.ByClass)
	printCounts(w, "source", p.BySource)
	if !p.DryRun {
		fmt.Fprintf(w, "dispatched %d to ingest.replay.*\n", p.Dispatched)
	}
}

func printCounts(w interface{ Write([]byte) (int, error) }, title string, m map[string]int) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(w, "  %-12s %-28s %d\n", title, k, m[k])
	}
}

func runDLQPause(ctx context.Context, env Env, args []string) error {
	return pauseReplay(ctx, env, args, true)
}

func runDLQResume(ctx context.Context, env Env, args []string) error {
	return pauseReplay(ctx, env, args, false)
}

// pauseReplay pauses or resumes operator and automatic replays (the
// INGEST "replay" and DLQ "replayer" durables); live ingestion
// ("workers") and triage are untouched. Each change is recorded in
// replay_audit with who asked and why, as the console records it.
func pauseReplay(ctx context.Context, env Env, args []string, pause bool) error {
	var c conn
	t := replay.Toggle{Pause: pause, By: cliPrincipal(env)}
	var dur time.Duration
	name := "dlq resume"
	if pause {
		name = "dlq pause"
	}
	l := newLoader(env, name, &c, true)
	if pause {
		l.Duration(&dur, "for", "", 0, "pause for this long (default: until resumed)")
	}
	l.String(&t.Reason, "reason", "", "", "why (required; recorded in replay_audit)")
	if _, err := parse(l, args); err != nil {
		return err
	}
	if t.Reason == "" {
		return usageErr("%s needs --reason: say why, for the audit trail", name)
	}
	if dur < 0 {
		return usageErr("--for must be positive")
	}
	if dur > 0 {
		t.Until = time.Now().Add(dur)
	}
	pool, err := openPool(ctx, c.DatabaseURL)
	if err != nil {
		return err
	}
	defer pool.Close()
	nc, js, err := c.connectNATS("sluice-cli", zerolog.Nop())
	if err != nil {
		return err
	}
	defer nc.Close()
	until, err := t.Apply(ctx, pool, js)
	if err != nil {
		return err
	}
	if !pause {
		fmt.Fprintln(env.Stderr, "operator and automatic replays resumed")
		return nil
	}
	fmt.Fprintf(env.Stderr, "operator and automatic replays paused until %s\n", until.UTC().Format(time.RFC3339))
	return nil
}
