package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sluicehq/sluice/internal/store/runs"
)

// maxRunsLimit bounds --limit of sluice runs.
const maxRunsLimit = 1000

// runsList is the JSON output of `sluice runs`.
type runsList struct {
	// Runs are the newest first.
	Runs []runRow `json:"runs"`
}

// runRow is one ingest run. Stored and Parked are the counters the run
// recorded, which may lag; Manifest is counted live.
type runRow struct {
	RunID        string     `json:"run_id"`
	SourceID     string     `json:"source_id"`
	StartedAt    time.Time  `json:"started_at"`
	FinishedAt   *time.Time `json:"finished_at"`
	Status       string     `json:"status"`
	Documents    int        `json:"documents"`
	Published    int        `json:"published"`
	Stored       int        `json:"stored"`
	Parked       int        `json:"parked"`
	HaltedReason *string    `json:"halted_reason"`
	// HeartbeatAt is when the run's producer was last heard from; a run
	// whose producer fell silent for longer than its timeout ends
	// interrupted once its chunks have settled.
	HeartbeatAt *time.Time `json:"heartbeat_at"`
	// Manifest counts, now, the run's chunks in ingest_manifest by status.
	Manifest manifestCounts `json:"manifest"`
	// Escalated counts the run's escalated dead letters, resolved or not:
	// chunks held back for a secret or a compliance rule, among Parked.
	Escalated int64 `json:"escalated"`
	// Files is what the run did with the files its walk met; nil when
	// not recorded.
	Files *runs.Files `json:"files,omitempty"`
}

// manifestCounts are ingest_manifest rows of one run by status. A chunk
// counts for the run that last published it.
type manifestCounts struct {
	Pending int64 `json:"pending"`
	Stored  int64 `json:"stored"`
	Parked  int64 `json:"parked"`
}

func runRuns(ctx context.Context, env Env, args []string) error {
	if len(args) > 0 {
		if _, ok := runsCommands()[args[0]]; ok {
			return subcommand(ctx, env, "runs", runsCommands(), args)
		}
	}
	var c conn
	l := newLoader(env, "runs", &c, false)
	var source string
	var limit int
	var waitFor time.Duration
	l.String(&source, "source", "", "", "only runs of this source_id")
	l.Int(&limit, "limit", "", DefaultRunsLimit, "at most this many runs, newest first")
	l.Duration(&waitFor, "wait", "", 0, "wait up to this long until every run listed has ended and has no chunk pending, then list them; exit 1 if one has not")
	rest, err := parse(l, args)
	if err != nil {
		return err
	}
	if err := noArgs("runs", rest); err != nil {
		return err
	}
	if err := checkLimit(limit, maxRunsLimit); err != nil {
		return err
	}
	pool, err := openPool(ctx, c.DatabaseURL)
	if err != nil {
		return err
	}
	defer pool.Close()
	runs, err := listRuns(ctx, pool, source, limit)
	if err != nil {
		return err
	}
	var unsettled error
	if waitFor > 0 {
		if runs, err = awaitSettled(ctx, pool, source, limit, waitFor, runs); errors.Is(err, errUnsettled) {
			unsettled = err
		} else if err != nil {
			return err
		}
	}
	if c.JSON {
		return errors.Join(printJSON(env.Stdout, runsList{Runs: runs}), unsettled)
	}
	if len(runs) == 0 {
		fmt.Fprintln(env.Stderr, "no ingest runs")
		return nil
	}
	return errors.Join(printRuns(env.Stdout, runs), unsettled)
}

// listRuns reads the newest runs and counts their manifest rows live: the
// ingest_runs counters are updated in batches and lag the manifest.
func listRuns(ctx context.Context, pool *pgxpool.Pool, source string, limit int) ([]runRow, error) {
	list, err := runs.List(ctx, pool, runs.Filter{Source: source, Limit: limit})
	if err != nil {
		return nil, err
	}
	out := make([]runRow, len(list))
	for i, r := range list {
		out[i] = runRow{RunID: r.RunID, SourceID: r.SourceID, StartedAt: r.StartedAt.UTC(), FinishedAt: utcPtr(r.FinishedAt),
			Status: string(r.Status), Documents: r.Documents, Published: r.Published, Stored: r.Stored, Parked: r.Parked,
			HaltedReason: r.HaltedReason, HeartbeatAt: utcPtr(r.HeartbeatAt)}
	}
	return out, readRunDetails(ctx, pool, out)
}

// printRuns prints the runs, then why each halted, cancelled, failed or
// interrupted one stopped, what each escalated and which files each
// excluded. PENDING, STORED and PARKED are the live
// manifest counts; the run's own counters are in --json.
func printRuns(w io.Writer, runs []runRow) error {
	tw := newTable(w)
	fmt.Fprintln(tw, "RUN_ID\tSOURCE\tSTARTED\tFINISHED\tSTATUS\tDOCUMENTS\tPUBLISHED\tPENDING\tSTORED\tPARKED")
	for _, r := range runs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%d\t%d\t%d\t%d\n",
			cell(r.RunID), cell(r.SourceID), tableTime(r.StartedAt), tableTimePtr(r.FinishedAt), r.Status,
			r.Documents, r.Published, r.Manifest.Pending, r.Manifest.Stored, r.Manifest.Parked)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, r := range runs {
		if r.HaltedReason != nil {
			fmt.Fprintf(w, "%s %s: %s\n", cell(r.RunID), r.Status, cell(*r.HaltedReason))
		}
		if r.Escalated > 0 {
			fmt.Fprintf(w, "%s escalated: %d chunks held back for a secret or a compliance rule (sluice dlq ls --run %s --disposition escalate)\n",
				cell(r.RunID), r.Escalated, cell(r.RunID))
		}
		if r.Files != nil && r.Files.ExcludedTotal() > 0 {
			fmt.Fprintf(w, "%s files: %s (sluice runs show %s)\n", cell(r.RunID), r.Files, cell(r.RunID))
		}
	}
	return nil
}
