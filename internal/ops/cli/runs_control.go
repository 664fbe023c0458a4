package cli

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sluicehq/sluice/internal/platform/config"
	"github.com/sluicehq/sluice/internal/provider/batchapi"
	"github.com/sluicehq/sluice/internal/store/bulk"
	"github.com/sluicehq/sluice/internal/store/runs"
)

// runsCommands are the actions on one run; `sluice runs` alone lists.
func runsCommands() map[string]command {
	return map[string]command{
		"show":   {"one run and what it did with every file it met (read, excluded by reason, parked): show RUN", runRunsShow},
		"resume": {"let a halted run go on: resume RUN", runRunsResume},
		"cancel": {"cancel a run, parking its owed chunks as run_cancelled, and its source's bulk batches: cancel RUN --reason R", runRunsCancel},
	}
}

func runRunsResume(ctx context.Context, env Env, args []string) error {
	return controlRun(ctx, env, "runs resume", args, false, nil, func(ctx context.Context, c runControl) error {
		if err := runs.Resume(ctx, c.pool, c.runID); err != nil {
			return err
		}
		fmt.Fprintf(env.Stderr, "run %s resumed: its held chunks are released on their next delivery\n", c.runID)
		return nil
	})
}

func runRunsCancel(ctx context.Context, env Env, args []string) error {
	var provider batchapi.Config
	flags := func(l *config.Loader) {
		l.String(&provider.URL, "embedder-url", "EMBEDDER_URL", "",
			"the provider's API, to cancel the source's bulk batches there at once (unset: the bulk poller cancels them on its next pass)")
		l.String(&provider.APIKey, "embedder-api-key", "EMBEDDER_API_KEY", "", "API key, sent as a bearer token")
	}
	return controlRun(ctx, env, "runs cancel", args, true, flags, func(ctx context.Context, c runControl) error {
		var client *batchapi.Client
		if provider.URL != "" {
			var err error
			if client, err = batchapi.New(provider); err != nil {
				return usageErr("%v", err)
			}
		}
		if err := runs.Cancel(ctx, c.pool, c.runID, c.reason); err != nil {
			return err
		}
		fmt.Fprintf(env.Stderr, "run %s cancelled: its owed chunks are parked as run_cancelled on their next delivery\n", c.runID)
		return cancelBulk(ctx, env, c, client)
	})
}

// cancelBulk cancels the bulk batches of the run's source: a bulk load is
// its source's, whichever run admitted its chunks. Without a client it
// only marks those the provider has, for the bulk poller to cancel there.
func cancelBulk(ctx context.Context, env Env, c runControl, client *batchapi.Client) error {
	run, err := runs.Read(ctx, c.pool, c.runID)
	if err != nil {
		return fmt.Errorf("run %s cancelled, but reading its source: %w", c.runID, err)
	}
	source := run.SourceID
	done, err := bulk.NewCanceller(c.pool, client, bulk.Deps{}).Cancel(ctx, source)
	if n := done.Cancelled + done.AtProvider + done.Marked; n == 0 && err == nil {
		fmt.Fprintf(env.Stderr, "source %s has no unfinished bulk batches\n", source)
		return nil
	}
	fmt.Fprintf(env.Stderr, "bulk batches of source %s: %d cancelled before the provider had them, %d cancelled at the provider, "+
		"%d marked for the bulk poller to cancel at the provider on its next pass\n", source, done.Cancelled, done.AtProvider, done.Marked)
	if err != nil {
		return fmt.Errorf("run %s cancelled, but its bulk batches: %w", c.runID, err)
	}
	return nil
}

// runControl is what a run action needs.
type runControl struct {
	pool   *pgxpool.Pool
	runID  string
	reason string
}

// controlRun parses `RUN [--reason R]` and the flags that flags (if not
// nil) registers, opens the database and runs act. An unknown run or a
// run in the wrong state fails with the run's status named.
func controlRun(ctx context.Context, env Env, name string, args []string, wantReason bool, flags func(*config.Loader),
	act func(context.Context, runControl) error) error {
	var c conn
	l := newLoader(env, name, &c, false)
	var rc runControl
	if wantReason {
		l.String(&rc.reason, "reason", "", "", "why the run is cancelled (required; recorded with every dead letter)")
	}
	if flags != nil {
		flags(l)
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
