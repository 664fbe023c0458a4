package cli_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sluicehq/sluice/internal/dev/embedsim"
	"github.com/sluicehq/sluice/internal/dev/testenv"
	"github.com/sluicehq/sluice/internal/provider/batchapi"
	"github.com/sluicehq/sluice/migrations"
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

// Cancelling a run cancels its source's bulk load, as the operator's
// role and with no provider settings: the open batch is cancelled, the
// batch the provider has is marked for the bulk poller to cancel there,
// and another source's batches go on.
func TestRunsCancelCancelsTheSourcesBulkBatches(t *testing.T) {
	t.Parallel()
	db := testenv.NewDatabase(t)
	seedRunRow(t, db.Pool, "run-wiki", "wiki", time.Hour, 1, 5, 0, 0)
	seedBatches(t, db.Pool) // wiki: 1 created, 2 open; news: 3 requeued
	if _, err := db.Pool.Exec(context.Background(), `
		INSERT INTO bulk_batches (source_id, state, input_file_id, provider_batch_id, opened_at, sealed_at, uploaded_at, create_requested_at, created_at, updated_at)
		VALUES ('news', 'created', 'file-in-4', 'batch-p4', now(), now(), now(), now(), now(), now())`); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"DATABASE_URL": db.RoleURL(migrations.OperatorRole)}
	code, _, errOut := sluice(t, env, "runs", "cancel", "run-wiki", "--reason", "wrong export")
	if code != 0 || !strings.Contains(errOut, "bulk batches of source wiki: 1 cancelled before the provider had them, 0 cancelled at the provider, 1 marked") {
		t.Fatalf("runs cancel: exit %d, %q; want wiki's 2 batches counted", code, errOut)
	}
	var got []string
	rows, err := db.Pool.Query(context.Background(), `SELECT batch_id, state, cancel_requested_at IS NOT NULL FROM bulk_batches ORDER BY batch_id`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id int64
		var state string
		var marked bool
		if err := rows.Scan(&id, &state, &marked); err != nil {
			t.Fatal(err)
		}
		got = append(got, fmt.Sprintf("%d %s %v", id, state, marked))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	want := "[1 created true 2 cancelled true 3 requeued false 4 created false]"
	if fmt.Sprint(got) != want {
		t.Errorf("batches after runs cancel: %v, want %s", got, want)
	}
	// Without batches, cancelling says so.
	seedRunRow(t, db.Pool, "run-docs", "docs", time.Hour, 1, 1, 0, 0)
	if code, _, errOut := sluice(t, env, "runs", "cancel", "run-docs", "--reason", "wrong export"); code != 0 || !strings.Contains(errOut, "source docs has no unfinished bulk batches") {
		t.Errorf("runs cancel of a source without batches: exit %d, %q", code, errOut)
	}
}

// With EMBEDDER_URL set, cancelling a run cancels its source's provider
// batches at the provider at once.
func TestRunsCancelAsksTheProviderWithEmbedderURL(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	sim := embedsim.StartTest(t, embedsim.Config{Dims: 8, Batch: embedsim.BatchConfig{Validating: time.Hour}})
	client, err := batchapi.New(batchapi.Config{URL: sim.URL()})
	if err != nil {
		t.Fatal(err)
	}
	var file bytes.Buffer
	w, err := batchapi.NewBuilder(&file, batchapi.BuilderConfig{Model: sim.Model(), Dims: 8})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Add("m1", []string{"river text"}); err != nil {
		t.Fatal(err)
	}
	f, err := client.UploadFile(ctx, "requests.jsonl", &file)
	if err != nil {
		t.Fatal(err)
	}
	pb, err := client.CreateBatch(ctx, batchapi.CreateParams{InputFileID: f.ID})
	if err != nil {
		t.Fatal(err)
	}
	db := testenv.NewDatabase(t)
	seedRunRow(t, db.Pool, "run-wiki", "wiki", time.Hour, 1, 1, 0, 0)
	if _, err := db.Pool.Exec(ctx, `
		INSERT INTO bulk_batches (source_id, state, input_file_id, provider_batch_id, opened_at, sealed_at, uploaded_at, create_requested_at, created_at, updated_at)
		VALUES ('wiki', 'validating', $1, $2, now(), now(), now(), now(), now(), now())`, f.ID, pb.ID); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"DATABASE_URL": db.RoleURL(migrations.OperatorRole), "EMBEDDER_URL": sim.URL()}
	code, _, errOut := sluice(t, env, "runs", "cancel", "run-wiki", "--reason", "wrong export")
	if code != 0 || !strings.Contains(errOut, "0 cancelled before the provider had them, 1 cancelled at the provider, 0 marked") {
		t.Fatalf("runs cancel: exit %d, %q; want 1 batch cancelled at the provider", code, errOut)
	}
	if pb, err = client.Batch(ctx, pb.ID); err != nil || (pb.Status != batchapi.StatusCancelling && pb.Status != batchapi.StatusCancelled) {
		t.Errorf("provider batch = %+v, %v; want cancelling", pb, err)
	}
}
