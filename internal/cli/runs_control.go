package cli

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sluicehq/sluice/internal/runs"
)

// runsCommands are the actions on one run; `sluice runs` alone lists.
func runsCommands() map[string]command {
	return map[string]command{
		"resume": {"let a halted run go on: resume RUN", runRunsResume},
		"cancel": {"cancel a run, parking its owed chunks as run_cancelled: cancel RUN --reason R", runRunsCancel},
	}
}

func runRunsResume(ctx context.Context, env Env, args []string) error {
	return controlRun(ctx, env, "runs resume", args, false, func(ctx context.Context, c runControl) error {
		if err := runs.Resume(ctx, c.pool, c.runID); err != nil {
			return err
		}
		fmt.Fprintf(env.Stderr, "run %s resumed: its held chunks are released on their next delivery\n", c.runID)
		return nil
	})
}

func runRunsCancel(ctx context.Context, env Env, args []string) error {
	return controlRun(ctx, env, "runs cancel", args, true, func(ctx context.Context, c runControl) error {
		if err := runs.Cancel(ctx, c.pool, c.runID, c.reason); err != nil {
			return err
		}
		fmt.Fprintf(env.Stderr, "run %s cancelled: its owed chunks are parked as run_cancelled on their next delivery\n", c.runID)
		return nil
	})
}

// runControl is what a run action needs.
type runControl struct {
	pool   *pgxpool.Pool
	runID  string
	reason string
}

// controlRun parses `RUN [--reason R]`, opens the database and runs act.
// An unknown run or a run in the wrong state fails with the run's status
// named.
func controlRun(ctx context.Context, env Env, name string, args []string, wantReason bool, act func(context.Context, runControl) error) error {
	var c conn
	l := newLoader(env, name, &c, false)
	var rc runControl
	if wantReason {
		l.String(&rc.reason, "reason", "", "", "why the run is cancelled (required; recorded with every dead letter)")
	}
	rest, err := parseInterspersed(l, args)
	if err != nil {
		return err
	}
	if len(rest) != 1 || rest[0] == "" {
		return usageErr("%s takes one run id, got %q", name, rest)
	}
	if wantReason && rc.reason == "" {
		return usageErr("%s needs --reason: say why, for the dead letters and the audit trail", name)
	}
	rc.runID = rest[0]
	pool, err := openPool(ctx, c.DatabaseURL)
	if err != nil {
		return err
	}
	defer pool.Close()
	rc.pool = pool
	return act(ctx, rc)
}
