package cli_test

import (
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/dev/testenv"
	"github.com/sluicehq/sluice/internal/provider/tokens"
	"github.com/sluicehq/sluice/pkg/vectorstore"
)

// index build makes a later generation's nearest-neighbour index (a dry
// run first, once only), index status shows it, and index drop removes it
// with the generation's vectors; each step is audited.
func TestIndexBuildMakesAndDropRemovesTheIndex(t *testing.T) {
	t.Parallel()
	b := setupIndexOf(t, indexTexts, testenv.WithPgvector())
	if code, out, errOut := sluice(t, b.env, "index", "create", "--model", secondModel, "--dims", "8", "--reason", "r", "--execute"); code != 0 {
		t.Fatalf("create: exit %d, %q %q", code, out, errOut)
	}
	// Before anything is written every chunk is owed, and its text,
	// held by generation 1, is what finishing costs.
	var status struct {
		Cost struct {
			Tokens  int `json:"tokens"`
			Counted int `json:"counted"`
			Unheld  int `json:"unheld"`
		} `json:"cost"`
	}
	sluiceDecode(t, b.env, &status, "index", "status", "2", "--cost")
	counter, _ := tokens.ForModel(secondModel)
	if want := tokens.Sum(counter, indexTexts); status.Cost.Tokens != want || status.Cost.Counted != 3 || status.Cost.Unheld != 0 {
		t.Errorf("status --cost = %+v; want %d tokens for 3 chunks", status.Cost, want)
	}
	if code, out, _ := sluice(t, b.env, "index", "status", "2", "--cost"); code != 0 || !strings.Contains(out, "cost to finish: ") || !strings.Contains(out, "tokens (cl100k_base) for the 3 owed chunks") {
		t.Errorf("status --cost:\n%s\nwant the cost, counted with the simulator model's tokenizer", out)
	}
	b.write(t, 2, secondDims, secondModel, "g2: ")
	name := vectorstore.GenerationIndex(2)
	has := func() bool {
		t.Helper()
		ok, err := vectorstore.HasGenerationIndex(b.ctx, b.db.Pool, 2)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	if code, out, _ := sluice(t, b.env, "index", "status", "2"); code != 0 || !strings.Contains(out, "index: none; searches scan every vector (sluice index build 2)") {
		t.Errorf("status before the build:\n%s\nwant no index, and how to build it", out)
	}
	if code, out, errOut := sluice(t, b.env, "index", "build", "2", "--reason", "backfilled"); code != 0 || !strings.Contains(out, "DRY RUN") || has() {
		t.Fatalf("build dry run: exit %d, %q %q, index exists %v; want a dry run that builds nothing", code, out, errOut, has())
	}
	if code, out, errOut := sluice(t, b.env, "index", "build", "2", "--reason", "backfilled", "--execute"); code != 0 || !strings.Contains(out, "built index "+name) || !has() {
		t.Fatalf("build: exit %d, %q %q, index exists %v", code, out, errOut, has())
	}
	if code, out, _ := sluice(t, b.env, "index", "status", "2"); code != 0 || !strings.Contains(out, "nearest-neighbour index: "+name) {
		t.Errorf("status after the build:\n%s\nwant the index named", out)
	}
	if code, out, errOut := sluice(t, b.env, "index", "build", "2", "--reason", "again", "--execute"); code != 0 || !strings.Contains(out, "exists already") {
		t.Errorf("second build: exit %d, %q %q; want nothing built", code, out, errOut)
	}
	for _, tc := range []struct{ gen, want string }{{"1", "generation 1's vectors are chunk_embeddings"}, {"9", "unknown index generation 9"}} {
		if code, out, errOut := sluice(t, b.env, "index", "build", tc.gen, "--reason", "r", "--execute"); code != 1 || out != "" || !strings.Contains(errOut, tc.want) {
			t.Errorf("build %s: exit %d, %q %q; want 1 and %q", tc.gen, code, out, errOut, tc.want)
		}
	}
	if code, out, errOut := sluice(t, b.env, "index", "drop", "2", "--reason", "done", "--execute"); code != 0 || !strings.Contains(out, "3 vectors and index "+name) || has() {
		t.Fatalf("drop: exit %d, %q %q, index exists %v; want the vectors and the index gone", code, out, errOut, has())
	}
	if code, out, errOut := sluice(t, b.env, "index", "build", "2", "--reason", "r", "--execute"); code != 1 || !strings.Contains(errOut, "was dropped") || has() {
		t.Errorf("build of a dropped generation: exit %d, %q %q; want it refused", code, out, errOut)
	}
	var audit string
	if err := b.db.Pool.QueryRow(b.ctx, `
		SELECT string_agg(action || ' ' || dry_run::text || ' ' || coalesce(detail->>'existed', detail->>'index', '-'), '|' ORDER BY audit_id)
		FROM index_generation_audit WHERE action IN ('build', 'drop')`).Scan(&audit); err != nil {
		t.Fatal(err)
	}
	if want := "build true false|build false false|build false true|drop false " + name; audit != want {
		t.Errorf("audit %q, want %q", audit, want)
	}
}
