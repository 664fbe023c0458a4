package console_test

import (
	"context"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/store/runs"
)

// A run whose producer fell silent shows as interrupted on the Runs page,
// and its page says when its producer was last heard from, what it
// published, and what to do next.
func TestRunPagesShowAnInterruptedRun(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	if err := runs.Open(ctx, b.db.Pool, "run-gamma", "gamma", time.Second); err != nil {
		t.Fatal(err)
	}
	if err := runs.Beat(ctx, b.db.Pool, "run-gamma", runs.Progress{Documents: 3, Published: 3}); err != nil {
		t.Fatal(err)
	}
	var beat time.Time
	if err := b.db.Pool.QueryRow(ctx, `UPDATE ingest_runs SET heartbeat_at = now() - interval '1 minute' WHERE run_id = 'run-gamma'
		RETURNING heartbeat_at`).Scan(&beat); err != nil {
		t.Fatal(err)
	}
	if err := runs.Refresh(ctx, b.db.Pool); err != nil {
		t.Fatal(err)
	}

	code, body := b.get(t, "/runs", viewerSecret)
	if code != http.StatusOK || !regexp.MustCompile(`run-gamma</a></td><td>gamma</td><td>interrupted</td>`).MatchString(body) {
		t.Errorf("GET /runs: %d, no interrupted run-gamma in:\n%s", code, body)
	}
	if err := runs.RecordFiles(ctx, b.db.Pool, "run-gamma", runs.Files{Seen: 5, Read: 3, Parked: 1, Excluded: map[string]int{"hidden": 1}}); err != nil {
		t.Fatal(err)
	}
	code, body = b.get(t, "/runs/run-gamma", viewerSecret)
	if files := `<td id="run-files">5 seen: 3 read, 1 excluded, 1 parked</td>`; !strings.Contains(body, files) || !strings.Contains(body, "Excluded: hidden</th><td>1</td>") {
		t.Errorf("GET /runs/run-gamma: no %q and its exclusions in:\n%s", files, body)
	}
	heard := "Producer last heard from</th><td>" + beat.UTC().Format("2006-01-02 15:04:05") + "</td>"
	if code != http.StatusOK || !strings.Contains(body, "interrupted: its producer stopped before it finished publishing") ||
		!strings.Contains(body, "having published 3 chunks") || !strings.Contains(body, heard) {
		t.Errorf("GET /runs/run-gamma: %d, want the interruption, what it published and %q in:\n%s", code, heard, body)
	}
}

// A run's rejection is the share of its settled chunks that are parked,
// as the halt threshold judges it: never over 100%, even when more
// chunks were parked than published (parked by the producer before
// publishing), and the Runs page says so where the column is named.
func TestRunRejectionIsAShareOfSettledChunks(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	if err := runs.Open(ctx, b.db.Pool, "run-delta", "delta", time.Second); err != nil {
		t.Fatal(err)
	}
	if _, err := b.db.Pool.Exec(ctx, `UPDATE ingest_runs SET published = 1, stored = 1, parked = 2 WHERE run_id = 'run-delta'`); err != nil {
		t.Fatal(err)
	}
	code, body := b.get(t, "/runs", viewerSecret)
	row := regexp.MustCompile(`run-delta</a>.*?<td class="n">([0-9.]+%)</td><td>`).FindStringSubmatch(body)
	if code != http.StatusOK || row == nil || row[1] != "66.7%" {
		t.Errorf("GET /runs: %d, rejection %q; want 66.7%% (2 of 3 settled chunks parked) in:\n%s", code, row, body)
	}
	if !strings.Contains(body, `title="The share of the run's settled chunks (stored or parked) that are parked`) {
		t.Errorf("GET /runs: the Rejection column does not say what it measures:\n%s", body)
	}
	if _, body := b.get(t, "/runs/run-delta", viewerSecret); !strings.Contains(body, "<td>66.7%</td>") {
		t.Errorf("GET /runs/run-delta: want a rejection of 66.7%% in:\n%s", body)
	}
}
