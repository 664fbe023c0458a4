package cli_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sluicehq/sluice/internal/dev/testenv"
	"github.com/sluicehq/sluice/internal/store/runs"
)

// seedManifestRows gives run one document of source with a chunk per status.
func seedManifestRows(t *testing.T, pool *pgxpool.Pool, run, source string, statuses ...string) {
	t.Helper()
	ctx := context.Background()
	docID := "doc-" + run
	_, err := pool.Exec(ctx, `
		INSERT INTO documents (doc_id, source_id, source_native_id, run_id, version, content_hash, chunk_count, status)
		VALUES ($1, $2, $1, $3, 1, 'h', $4, 'processing')`, docID, source, run, len(statuses))
	if err != nil {
		t.Fatalf("seed document: %v", err)
	}
	for i, st := range statuses {
		_, err := pool.Exec(ctx, `
			INSERT INTO ingest_manifest (doc_id, chunk_index, version, content_hash, status, run_id, job)
			VALUES ($1, $2, 1, 'h', $3, $4, '\x7b7d')`, docID, i, st, run)
		if err != nil {
			t.Fatalf("seed manifest: %v", err)
		}
	}
}

// seedRunsFixture seeds two runs whose counters lag their manifest rows:
// run-old (wiki, completed) and, two hours later, run-new (news, running).
func seedRunsFixture(t *testing.T) map[string]string {
	t.Helper()
	db := testenv.NewDatabase(t)
	// The run counters say nothing stored yet; the manifest knows better.
	seedRunRow(t, db.Pool, "run-old", "wiki", 3*time.Hour, 1, 2, 2, 0)
	seedRunRow(t, db.Pool, "run-new", "news", time.Hour, 1, 6, 0, 0)
	seedManifestRows(t, db.Pool, "run-old", "wiki", "stored", "stored")
	seedManifestRows(t, db.Pool, "run-new", "news", "pending", "pending", "pending", "stored", "stored", "parked", "superseded")
	if _, err := db.Pool.Exec(context.Background(),
		`UPDATE ingest_runs SET status = 'completed', finished_at = started_at + interval '5 minutes' WHERE run_id = 'run-old'`); err != nil {
		t.Fatal(err)
	}
	return map[string]string{"DATABASE_URL": db.URL}
}

func TestRunsJSONShowsLiveManifestCounts(t *testing.T) {
	t.Parallel()
	env := seedRunsFixture(t)
	var list struct {
		Runs []struct {
			RunID      string     `json:"run_id"`
			SourceID   string     `json:"source_id"`
			Status     string     `json:"status"`
			FinishedAt *time.Time `json:"finished_at"`
			Published  int        `json:"published"`
			Stored     int        `json:"stored"`
			Manifest   struct {
				Pending int `json:"pending"`
				Stored  int `json:"stored"`
				Parked  int `json:"parked"`
			} `json:"manifest"`
		} `json:"runs"`
	}
	sluiceDecode(t, env, &list, "runs")
	var got []string
	for _, r := range list.Runs {
		got = append(got, fmt.Sprintf("%s %s %s finished=%v published=%d stored=%d live=%d/%d/%d", r.RunID, r.SourceID, r.Status,
			r.FinishedAt != nil, r.Published, r.Stored, r.Manifest.Pending, r.Manifest.Stored, r.Manifest.Parked))
	}
	want := []string{
		"run-new news running finished=false published=6 stored=0 live=3/2/1",
		"run-old wiki completed finished=true published=2 stored=2 live=0/2/0",
	}
	if !slices.Equal(got, want) {
		t.Errorf("runs\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	sluiceDecode(t, env, &list, "runs", "--source", "wiki")
	if len(list.Runs) != 1 || list.Runs[0].RunID != "run-old" {
		t.Errorf("--source wiki: %+v", list.Runs)
	}
	sluiceDecode(t, env, &list, "runs", "--limit", "1")
	if len(list.Runs) != 1 || list.Runs[0].RunID != "run-new" {
		t.Errorf("--limit 1: %+v", list.Runs)
	}
}

func TestRunsText(t *testing.T) {
	t.Parallel()
	env := seedRunsFixture(t)
	code, out, errOut := sluice(t, env, "runs")
	if code != 0 {
		t.Fatalf("runs: exit %d, %s", code, errOut)
	}
	// RUN_ID SOURCE STARTED FINISHED STATUS DOCUMENTS PUBLISHED PENDING STORED PARKED
	if f := rowFields(t, out, "run-new"); !slices.Equal(f[3:], []string{"-", "running", "1", "6", "3", "2", "1"}) {
		t.Errorf("run-new row %q", f)
	}
	if strings.Index(out, "run-new") > strings.Index(out, "run-old") {
		t.Errorf("runs not newest first:\n%s", out)
	}
}

// A run whose producer fell silent shows as interrupted, finished, with
// when its producer was last heard from and what to do next.
func TestRunsShowAnInterruptedRun(t *testing.T) {
	t.Parallel()
	db := testenv.NewDatabase(t)
	ctx := context.Background()
	if err := runs.Open(ctx, db.Pool, "run-killed", "wiki", time.Second); err != nil {
		t.Fatal(err)
	}
	if err := runs.Beat(ctx, db.Pool, "run-killed", runs.Progress{Documents: 1, Published: 2}); err != nil {
		t.Fatal(err)
	}
	seedManifestRows(t, db.Pool, "run-killed", "wiki", "stored", "stored")
	var beat time.Time
	if err := db.Pool.QueryRow(ctx, `UPDATE ingest_runs SET heartbeat_at = now() - interval '1 minute' RETURNING heartbeat_at`).Scan(&beat); err != nil {
		t.Fatal(err)
	}
	if err := runs.Refresh(ctx, db.Pool); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"DATABASE_URL": db.URL}

	var list struct {
		Runs []struct {
			Status      string     `json:"status"`
			FinishedAt  *time.Time `json:"finished_at"`
			HeartbeatAt *time.Time `json:"heartbeat_at"`
			Published   int        `json:"published"`
		} `json:"runs"`
	}
	sluiceDecode(t, env, &list, "runs")
	if len(list.Runs) != 1 {
		t.Fatalf("runs: %+v", list.Runs)
	}
	r := list.Runs[0]
	if r.Status != "interrupted" || r.FinishedAt == nil || r.HeartbeatAt == nil || !r.HeartbeatAt.Equal(beat) || r.Published != 2 {
		t.Errorf("interrupted run in --json: %+v, want interrupted, finished, last heard from at %s, 2 published", r, beat)
	}

	code, out, errOut := sluice(t, env, "runs")
	if code != 0 {
		t.Fatalf("runs: exit %d, %s", code, errOut)
	}
	// RUN_ID SOURCE STARTED FINISHED STATUS DOCUMENTS PUBLISHED PENDING STORED PARKED
	if f := rowFields(t, out, "run-killed"); f[3] == "-" || !slices.Equal(f[4:], []string{"interrupted", "1", "2", "0", "2", "0"}) {
		t.Errorf("run-killed row %q", f)
	}
	if !strings.Contains(out, "run-killed interrupted: its producer stopped before it finished publishing (last heard from at "+beat.UTC().Format(time.RFC3339)) ||
		!strings.Contains(out, "run the producer again on the same source") {
		t.Errorf("runs does not say why run-killed was interrupted:\n%s", out)
	}
}

func TestRunsRejectsBadFlags(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"--limit", "0"}, {"--limit", "x"}, {"extra"}} {
		code, _, errOut := sluice(t, nil, append([]string{"runs"}, args...)...)
		if code != 2 {
			t.Errorf("runs %v: exit %d (%s), want 2", args, code, errOut)
		}
	}
}

// A failed run says why in sluice runs, not only in --json: the reason
// its producer recorded is printed under the table.
func TestRunsShowsWhyARunFailed(t *testing.T) {
	t.Parallel()
	db := testenv.NewDatabase(t)
	ctx := context.Background()
	if err := runs.Open(ctx, db.Pool, "run-bad", "wiki", time.Minute); err != nil {
		t.Fatal(err)
	}
	failure := errors.New("read input /data/wiki: permission denied")
	if err := runs.EndPublishing(ctx, db.Pool, "run-bad", runs.Progress{Documents: 1, Published: 2}, 0, failure); err != nil {
		t.Fatal(err)
	}
	if err := runs.Refresh(ctx, db.Pool); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := sluice(t, map[string]string{"DATABASE_URL": db.URL}, "runs")
	if code != 0 || !strings.Contains(out, "failed") || !strings.Contains(out, failure.Error()) {
		t.Errorf("sluice runs: exit %d, %q %q; want the failed run and its reason %q", code, out, errOut, failure)
	}
}

// sluice runs says what a run escalated and which files it excluded,
// with the command that lists them; a run with neither says nothing of
// them.
func TestRunsShowEscalationsAndExcludedFiles(t *testing.T) {
	t.Parallel()
	db := testenv.NewDatabase(t)
	ctx := context.Background()
	for _, id := range []string{"run-docs", "run-quiet"} {
		if err := runs.Open(ctx, db.Pool, id, "docs", time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	if err := runs.RecordFiles(ctx, db.Pool, "run-docs", runs.Files{Seen: 5, Read: 2, Excluded: map[string]int{"hidden": 3}}); err != nil {
		t.Fatal(err)
	}
	seedDLRows(t, db.Pool,
		dlRow{id: "e1", source: "docs", run: "run-docs", class: "policy_violation", disposition: "escalate", lastAgo: time.Minute},
		dlRow{id: "e2", source: "docs", run: "run-docs", class: "policy_violation", disposition: "escalate", lastAgo: time.Minute, resolved: true},
		dlRow{id: "q1", source: "docs", run: "run-quiet", class: "unsupported_format", lastAgo: time.Minute})
	code, out, errOut := sluice(t, map[string]string{"DATABASE_URL": db.URL}, "runs")
	if code != 0 {
		t.Fatalf("runs: exit %d, %s", code, errOut)
	}
	for _, want := range []string{
		"run-docs escalated: 2 chunks held back for a secret or a compliance rule (sluice dlq ls --run run-docs --disposition escalate)",
		"run-docs files: 5 seen, 2 read, 3 excluded (hidden 3), 0 parked (sluice runs show run-docs)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("sluice runs lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "run-quiet escalated") || strings.Contains(out, "run-quiet files") {
		t.Errorf("sluice runs reports escalations or exclusions of run-quiet:\n%s", out)
	}
	var list struct {
		Runs []struct {
			RunID     string `json:"run_id"`
			Escalated int    `json:"escalated"`
		} `json:"runs"`
	}
	sluiceDecode(t, map[string]string{"DATABASE_URL": db.URL}, &list, "runs")
	for _, r := range list.Runs {
		if want := map[string]int{"run-docs": 2}[r.RunID]; r.Escalated != want {
			t.Errorf("%s: escalated %d in --json, want %d", r.RunID, r.Escalated, want)
		}
	}
}

// sluice runs --wait returns at once when the runs listed have settled,
// and fails, still listing them, when one is still running at the end of
// its wait.
func TestRunsWait(t *testing.T) {
	t.Parallel()
	env := seedRunsFixture(t)
	if code, out, errOut := sluice(t, env, "runs", "--source", "wiki", "--wait", "1m"); code != 0 || !strings.Contains(out, "run-old") {
		t.Errorf("runs --source wiki --wait 1m (settled): exit %d\n%s\n%s", code, out, errOut)
	}
	code, out, errOut := sluice(t, env, "runs", "--wait", "300ms")
	if code != 1 || !strings.Contains(out, "run-new") || !strings.Contains(errOut, "runs still in progress: 1 of them after 300ms") {
		t.Errorf("runs --wait 300ms (run-new running): exit %d, want 1\n%s\n%s", code, out, errOut)
	}
}
