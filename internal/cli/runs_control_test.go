package cli_test

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Resume and cancel through the CLI: each changes only a run in a state
// it applies to, says so, and refuses the rest with the run's status.
func TestRunsResumeAndCancel(t *testing.T) {
	t.Parallel()
	env := seedRunsFixture(t)
	db := env["DATABASE_URL"]
	status := func(run string) string {
		t.Helper()
		code, out, _ := sluice(t, env, "runs", "--json")
		if code != 0 {
			t.Fatalf("runs --json exited %d", code)
		}
		i := strings.Index(out, `"run_id": "`+run+`"`)
		if i < 0 {
			t.Fatalf("run %s not listed: %s", run, out)
		}
		rest := out[i:]
		j := strings.Index(rest, `"status": "`) + len(`"status": "`)
		return rest[j : j+strings.Index(rest[j:], `"`)]
	}
	if code, _, errOut := sluice(t, env, "runs", "resume", "run-new"); code != 1 || !strings.Contains(errOut, "run-new is running") {
		t.Errorf("resume of a running run: exit %d, %q; want 1 naming its status", code, errOut)
	}
	if code, _, errOut := sluice(t, env, "runs", "cancel", "run-new"); code != 2 || !strings.Contains(errOut, "--reason") {
		t.Errorf("cancel without a reason: exit %d, %q; want usage error asking for --reason", code, errOut)
	}
	if code, _, errOut := sluice(t, env, "runs", "resume", "no-such-run"); code != 1 || !strings.Contains(errOut, "no such run") {
		t.Errorf("resume of an unknown run: exit %d, %q", code, errOut)
	}
	pool, err := pgxpool.New(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	if _, err := pool.Exec(context.Background(), `UPDATE ingest_runs SET status = 'halted', halted_reason = 'ratio' WHERE run_id = 'run-new'`); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := sluice(t, env, "runs", "resume", "run-new"); code != 0 || status("run-new") != "running" {
		t.Errorf("resume of a halted run: exit %d, %q, status %s", code, errOut, status("run-new"))
	}
	if code, _, errOut := sluice(t, env, "runs", "cancel", "run-new", "--reason", "bad export"); code != 0 || status("run-new") != "cancelled" {
		t.Errorf("cancel: exit %d, %q, status %s", code, errOut, status("run-new"))
	}
	if code, _, errOut := sluice(t, env, "runs", "cancel", "run-old", "--reason", "late"); code != 1 || !strings.Contains(errOut, "run-old is completed") {
		t.Errorf("cancel of an ended run: exit %d, %q", code, errOut)
	}
}
