package cli_test

import (
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/dev/embedsim"
	"github.com/sluicehq/sluice/internal/dev/testenv"
	"github.com/sluicehq/sluice/internal/platform/natsauth"
	"github.com/sluicehq/sluice/internal/provider/batchapi"
	"github.com/sluicehq/sluice/internal/store/bulk"
)

// Given the provider's API, reconcile reports a request file Sluice
// uploaded that no bulk batch uses, and --redrive deletes it; another's
// file is left alone.
func TestReconcileDeletesOrphanBulkFiles(t *testing.T) {
	t.Parallel()
	db := testenv.NewDatabase(t)
	n := testenv.NewNATS(t)
	if code, _, errOut := sluice(t, map[string]string{"NATS_URL": n.URL}, "nats", "setup"); code != 0 {
		t.Fatalf("nats setup exited %d: %s", code, errOut)
	}
	sim := embedsim.StartTest(t, embedsim.Config{})
	client, err := batchapi.New(batchapi.Config{URL: sim.URL()})
	if err != nil {
		t.Fatal(err)
	}
	line := `{"custom_id":"x","method":"POST","url":"/v1/embeddings","body":{"model":"m","input":["x"]}}` + "\n"
	orphan, err := client.UploadFile(t.Context(), bulk.UploadName(7), strings.NewReader(line))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.UploadFile(t.Context(), "someone-else.jsonl", strings.NewReader(line)); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"DATABASE_URL": db.URL, "NATS_URL": n.URLFor(natsauth.Operator), "EMBEDDER_URL": sim.URL()}

	code, out, errOut := sluice(t, env, "reconcile")
	if code != 1 || !strings.Contains(out, orphan.ID) || strings.Contains(out, "someone-else") {
		t.Fatalf("reconcile exited %d, want 1 naming %s only:\n%s%s", code, orphan.ID, out, errOut)
	}
	if code, out, errOut := sluice(t, env, "reconcile", "--redrive"); code != 0 || !strings.Contains(out, "redriven bulk_orphan_files: 1") {
		t.Fatalf("reconcile --redrive exited %d, want 0 with the file deleted:\n%s%s", code, out, errOut)
	}
	files, err := client.AllFiles(t.Context(), batchapi.PurposeBatch)
	if err != nil || len(files) != 1 || files[0].Filename != "someone-else.jsonl" {
		t.Fatalf("provider files after --redrive: %+v, %v; want only someone-else.jsonl", files, err)
	}
}
