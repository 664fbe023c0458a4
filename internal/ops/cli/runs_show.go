package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/sluicehq/sluice/internal/store/runs"
)

// runShow is the output of `sluice runs show`.
type runShow struct {
	RunID        string `json:"run_id"`
	Status       string `json:"status"`
	HaltedReason string `json:"halted_reason,omitempty"`
	// Files is what the run did with the files it met; null for a run
	// recorded before they were counted, or still reading.
	Files *runs.Files `json:"files"`
}

// runRunsShow prints one run: its status and what it did with every file
// it met.
func runRunsShow(ctx context.Context, env Env, args []string) error {
	var c conn
	l := newLoader(env, "runs show", &c, false)
	rest, err := parseInterspersed(l, args)
	if err != nil {
		return err
	}
	if len(rest) != 1 || rest[0] == "" {
		return usageErr("runs show takes one run id (see sluice runs), got %q", rest)
	}
	pool, err := openPool(ctx, c.DatabaseURL)
	if err != nil {
		return err
	}
	defer pool.Close()
	st, reason, err := runs.Get(ctx, pool, rest[0])
	if errors.Is(err, runs.ErrNoRun) {
		return fmt.Errorf("run %q not found: list runs with sluice runs", rest[0])
	}
	if err != nil {
		return err
	}
	out := runShow{RunID: rest[0], Status: string(st), HaltedReason: reason}
	if out.Files, err = runs.ReadFiles(ctx, pool, rest[0]); err != nil {
		return err
	}
	if c.JSON {
		return printJSON(env.Stdout, out)
	}
	fmt.Fprintf(env.Stdout, "run %s: %s", cell(out.RunID), out.Status)
	if reason != "" {
		fmt.Fprintf(env.Stdout, " (%s)", cell(reason))
	}
	fmt.Fprintln(env.Stdout)
	if out.Files == nil {
		_, err = fmt.Fprintln(env.Stdout, "  files: not recorded (the run is still reading, or predates file counts)")
		return err
	}
	_, err = fmt.Fprintf(env.Stdout, "  files: %s\n", out.Files)
	return err
}
