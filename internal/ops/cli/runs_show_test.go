package cli_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/dev/testenv"
	"github.com/sluicehq/sluice/internal/store/runs"
)

// `sluice runs show` says what a run did with every file it met, as text
// and as JSON, and says so when a run has no file counts.
func TestRunsShowPrintsTheRunsFiles(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testenv.NewDatabase(t)
	for _, id := range []string{"run-files", "run-old"} {
		if err := runs.Open(ctx, db.Pool, id, "docs", time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	files := runs.Files{Seen: 17, Read: 10, Parked: 5, Excluded: map[string]int{"hidden": 1, "symlink_outside_tree": 1}}
	if err := runs.RecordFiles(ctx, db.Pool, "run-files", files); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"DATABASE_URL": db.URL}
	code, out, errOut := sluice(t, env, "runs", "show", "run-files")
	want := "files: 17 seen, 10 read, 2 excluded (hidden 1, symlink_outside_tree 1), 5 parked"
	if code != 0 || !strings.Contains(out, want) {
		t.Errorf("runs show: %d %q %q; want %q", code, out, errOut, want)
	}
	code, out, _ = sluice(t, env, "runs", "show", "run-files", "--json")
	var got struct {
		Files *runs.Files `json:"files"`
	}
	if err := json.Unmarshal([]byte(out), &got); code != 0 || err != nil || got.Files == nil || got.Files.Seen != 17 || got.Files.Excluded["hidden"] != 1 {
		t.Errorf("runs show --json: %d %q (%v)", code, out, err)
	}
	if code, out, _ = sluice(t, env, "runs", "show", "run-old"); code != 0 || !strings.Contains(out, "files: not recorded") {
		t.Errorf("runs show of a run without counts: %d %q", code, out)
	}
	if code, _, errOut = sluice(t, env, "runs", "show", "nope"); code == 0 || !strings.Contains(errOut, "not found") {
		t.Errorf("runs show of an unknown run: %d %q", code, errOut)
	}
}
