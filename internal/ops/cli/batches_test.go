package cli_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sluicehq/sluice/internal/dev/embedsim"
	"github.com/sluicehq/sluice/internal/dev/testenv"
	"github.com/sluicehq/sluice/internal/store/bulk"
	"github.com/sluicehq/sluice/migrations"
)

// seedBatches writes bulk batches as the ledger would have them: 1, of
// wiki, created at the provider with three members pending; 2, wiki's
// open batch with two; 3, of news, requeued after the provider failed it
// (invalid_request), one member parked and one requeued.
func seedBatches(t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	for _, sql := range []string{
		`INSERT INTO bulk_batches (source_id, state, input_file_id, provider_batch_id, requests, inputs, bytes, tokens,
		     opened_at, sealed_at, uploaded_at, create_requested_at, created_at, updated_at)
		 VALUES ('wiki', 'created', 'file-in-1', 'batch-p1', 3, 3, 900, 120,
		     now() - interval '2 hours', now() - interval '1 hour', now() - interval '1 hour', now() - interval '1 hour', now() - interval '1 hour', now())`,
		`INSERT INTO bulk_batches (source_id, state, requests, inputs, bytes, tokens, opened_at, updated_at)
		 VALUES ('wiki', 'open', 2, 2, 600, 80, now() - interval '10 minutes', now())`,
		`INSERT INTO bulk_batches (source_id, state, input_file_id, provider_batch_id, requests, inputs, bytes, tokens, parked, requeued,
		     opened_at, sealed_at, uploaded_at, create_requested_at, created_at, finished_at, settled_at, updated_at, last_error,
		     outcome, error_code, error_message)
		 VALUES ('news', 'requeued', 'file-in-3', 'batch-p3', 2, 2, 500, 70, 1, 1,
		     now() - interval '3 hours', now() - interval '3 hours', now() - interval '3 hours', now() - interval '3 hours',
		     now() - interval '3 hours', now() - interval '2 hours', now() - interval '2 hours', now(), 'invalid_request: model not found',
		     'failed', 'invalid_request', 'model not found')`,
		`INSERT INTO bulk_members (batch_id, custom_id, line_id, generation, source_id, doc_id, chunk_index, version, content_hash, text, tokens, bytes, state, error_class, updated_at)
		 VALUES (1, 'm1', 'm1', 1, 'wiki', 'd1', 0, 1, 'h', 'river text', 40, 300, 'pending', NULL, now()),
		        (1, 'm2', 'm2', 1, 'wiki', 'd1', 1, 1, 'h', 'river text', 40, 300, 'pending', NULL, now()),
		        (1, 'm3', 'm3', 1, 'wiki', 'd1', 2, 1, 'h', 'river text', 40, 300, 'pending', NULL, now()),
		        (3, 'n1', 'n1', 1, 'news', 'd9', 0, 1, 'h', '', 35, 250, 'parked', 'bad_request', now()),
		        (3, 'n2', 'n2', 1, 'news', 'd9', 1, 1, 'h', '', 35, 250, 'requeued', NULL, now())`,
	} {
		if _, err := pool.Exec(context.Background(), sql); err != nil {
			t.Fatalf("seed batches: %v", err)
		}
	}
}

// batchesEnv seeds the batches and connects the CLI as the operator's
// role, which reads the ledger.
func batchesEnv(t *testing.T) map[string]string {
	t.Helper()
	db := testenv.NewDatabase(t)
	seedBatches(t, db.Pool)
	return map[string]string{"DATABASE_URL": db.RoleURL(migrations.OperatorRole)}
}

type batchesOut struct {
	Batches []struct {
		ID                int64      `json:"batch_id"`
		SourceID          string     `json:"source_id"`
		State             string     `json:"state"`
		Tokens            int64      `json:"tokens"`
		CancelRequestedAt *time.Time `json:"cancel_requested_at"`
	} `json:"batches"`
}

func (o batchesOut) String() string {
	var parts []string
	for _, b := range o.Batches {
		parts = append(parts, fmt.Sprintf("%d %s %s %d", b.ID, b.SourceID, b.State, b.Tokens))
	}
	return strings.Join(parts, "; ")
}

// batches ls lists newest first and filters by source, state and limit;
// its table says why a batch failed.
func TestBatchesList(t *testing.T) {
	t.Parallel()
	env := batchesEnv(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "3 news requeued 70; 2 wiki open 80; 1 wiki created 120"},
		{[]string{"--source", "wiki"}, "2 wiki open 80; 1 wiki created 120"},
		{[]string{"--state", "created"}, "1 wiki created 120"},
		{[]string{"--limit", "1"}, "3 news requeued 70"},
		{[]string{"--source", "news", "--state", "open"}, ""},
	} {
		var out batchesOut
		sluiceDecode(t, env, &out, append([]string{"batches", "ls"}, c.args...)...)
		if got := out.String(); got != c.want {
			t.Errorf("batches ls %v: %s, want %s", c.args, got, c.want)
		}
	}
	code, out, errOut := sluice(t, env, "batches", "ls")
	if code != 0 {
		t.Fatalf("batches ls: exit %d, %s", code, errOut)
	}
	if got := strings.Join(rowFields(t, out, "1 "), " "); !strings.HasPrefix(got, "1 wiki 1 created - 0 3 120 0 0 0 ") || !strings.HasSuffix(got, " batch-p1") {
		t.Errorf("batches ls row of batch 1: %q", got)
	}
	if !strings.Contains(out, "batch 3 requeued: invalid_request: model not found") {
		t.Errorf("batches ls does not say why batch 3 failed:\n%s", out)
	}
	if code, _, errOut := sluice(t, env, "batches", "ls", "--source", "nope"); code != 0 || !strings.Contains(errOut, "no bulk batches match") {
		t.Errorf("batches ls of an unknown source: exit %d, %q", code, errOut)
	}
}

// batches show prints a batch with its members counted by state and
// error class, and never their text.
func TestBatchesShow(t *testing.T) {
	t.Parallel()
	env := batchesEnv(t)
	var detail struct {
		ID         int64  `json:"batch_id"`
		State      string `json:"state"`
		Provider   string `json:"provider_batch_id"`
		LastError  string `json:"last_error"`
		FinishedAt *time.Time
		Members    []struct {
			State      string `json:"state"`
			ErrorClass string `json:"error_class"`
			Members    int    `json:"members"`
		} `json:"members"`
	}
	sluiceDecode(t, env, &detail, "batches", "show", "3")
	if detail.ID != 3 || detail.State != "requeued" || detail.Provider != "batch-p3" || detail.LastError != "invalid_request: model not found" ||
		fmt.Sprint(detail.Members) != "[{parked bad_request 1} {requeued  1}]" {
		t.Errorf("batches show 3 --json: %+v", detail)
	}
	code, out, errOut := sluice(t, env, "batches", "show", "1")
	if code != 0 {
		t.Fatalf("batches show 1: exit %d, %s", code, errOut)
	}
	for _, want := range [][]string{{"state", "created"}, {"provider_batch_id", "batch-p1"}, {"tokens", "120"}, {"finished_at", "-"}, {"pending", "-", "3"}} {
		if got := rowFields(t, out, want[0]+" "); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("batches show 1: %v, want %v", got, want)
		}
	}
	if strings.Contains(out, "river text") {
		t.Errorf("batches show printed member text:\n%s", out)
	}
}

func TestBatchesRejectsBadInput(t *testing.T) {
	t.Parallel()
	env := batchesEnv(t)
	for _, c := range []struct {
		args []string
		code int
		says string
	}{
		{[]string{"batches"}, 2, "needs a subcommand"},
		{[]string{"batches", "ls", "--state", "running"}, 2, "use one of open, sealed"},
		{[]string{"batches", "ls", "--limit", "0"}, 2, "--limit 0"},
		{[]string{"batches", "ls", "extra"}, 2, "takes no arguments"},
		{[]string{"batches", "show"}, 2, "one batch ID"},
		{[]string{"batches", "show", "abc"}, 2, "positive number"},
		{[]string{"batches", "show", "1", "2"}, 2, "one batch ID"},
		{[]string{"batches", "show", "99"}, 1, "bulk batch 99 not found"},
	} {
		code, _, errOut := sluice(t, env, c.args...)
		if code != c.code || !strings.Contains(errOut, c.says) {
			t.Errorf("%v: exit %d, %q; want %d saying %q", c.args, code, errOut, c.code, c.says)
		}
	}
}

// batches ls names how a settled batch ended: a failed batch with the
// provider's error code and message, in its JSON and its table.
func TestBatchesListNamesTheEnd(t *testing.T) {
	t.Parallel()
	env := batchesEnv(t)
	code, out, errOut := sluice(t, env, "batches", "ls", "--source", "news", "--json")
	if code != 0 {
		t.Fatalf("batches ls exited %d: %s", code, errOut)
	}
	for _, want := range []string{`"outcome": "failed"`, `"error_code": "invalid_request"`, `"error_message": "model not found"`} {
		if !strings.Contains(out, want) {
			t.Errorf("batches ls --json lacks %s:\n%s", want, out)
		}
	}
	if code, out, errOut = sluice(t, env, "batches", "ls", "--source", "news"); code != 0 ||
		!strings.Contains(out, "batch 3 failed (invalid_request: model not found)") {
		t.Errorf("batches ls exited %d, want the failure named:\n%s%s", code, out, errOut)
	}
	if code, out, errOut = sluice(t, env, "batches", "show", "3"); code != 0 || !strings.Contains(out, "failed (invalid_request: model not found)") {
		t.Errorf("batches show exited %d, want the failure named:\n%s%s", code, out, errOut)
	}
}

// simFailure is embed-sim's message for a batch it fails.
const simFailure = "The batch failed because of an error on our side. Please try again."

// A batch driven by embed-sim's faults into each way a batch ends is
// named so by batches ls, in its JSON and its table, and on the
// console's Batches page: the provider's code and message for a failed
// batch, the members answered and not for one that expired half done.
func TestBatchesListNamesEachEnd(t *testing.T) {
	t.Parallel()
	const members = 20
	for _, tc := range []struct {
		name   string
		faults embedsim.BatchFaults
		// drive takes batch 1 to its end.
		drive   func(t *testing.T, r *batchRun)
		outcome string
		// ended is how the table and the console name the end; "" for
		// the expired batch, named by its counts.
		ended string
	}{
		{name: "failed", faults: embedsim.BatchFaults{FailRate: 1}, outcome: "failed", ended: "failed (server_error: " + simFailure + ")"},
		{name: "expired half answered", faults: embedsim.BatchFaults{ExpireRate: 1}, outcome: "expired"},
		{name: "lost", faults: embedsim.BatchFaults{LoseRate: 1}, outcome: "lost", ended: "lost"},
		{name: "output lost", outcome: "output_lost", ended: "lost output", drive: func(t *testing.T, r *batchRun) {
			r.until(t, "completed with an output file", func(_, provider string) bool {
				if provider == "" {
					return false
				}
				pb, err := r.client.Batch(r.ctx, provider)
				if err != nil || pb.OutputFileID == "" {
					return false
				}
				// The provider loses it before the poller reads it.
				if err := r.client.DeleteFile(r.ctx, pb.OutputFileID); err != nil {
					t.Fatal(err)
				}
				return true
			})
		}},
		{name: "cancelled", outcome: "cancelled", ended: "cancelled", drive: func(t *testing.T, r *batchRun) {
			r.until(t, "in progress", func(state, _ string) bool { return state == "in_progress" })
			if done, err := bulk.NewCanceller(r.db.Pool, r.client, r.deps).Cancel(r.ctx, "wiki"); err != nil || done.AtProvider != 1 {
				t.Fatalf("cancel wiki's batch: %+v, %v; want it cancelled at the provider", done, err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := startBatchRun(t, tc.faults, members)
			if tc.drive != nil {
				tc.drive(t, r)
			}
			r.settled(t)

			var out struct {
				Batches []struct {
					ID           int64  `json:"batch_id"`
					Outcome      string `json:"outcome"`
					ErrorCode    string `json:"error_code"`
					ErrorMessage string `json:"error_message"`
					Answered     int    `json:"answered"`
					Unanswered   int    `json:"unanswered"`
				} `json:"batches"`
			}
			sluiceDecode(t, r.env(), &out, "batches", "ls", "--source", "wiki")
			if len(out.Batches) == 0 || out.Batches[len(out.Batches)-1].ID != 1 {
				t.Fatalf("batches ls --json: %+v, want batch 1 listed", out.Batches)
			}
			got := out.Batches[len(out.Batches)-1]
			if got.Outcome != tc.outcome {
				t.Errorf("batches ls --json: batch 1 outcome %q, want %q", got.Outcome, tc.outcome)
			}
			wantCode, wantMessage := "", ""
			if tc.outcome == "failed" {
				wantCode, wantMessage = "server_error", simFailure
			}
			if got.ErrorCode != wantCode || got.ErrorMessage != wantMessage {
				t.Errorf("batches ls --json: batch 1 error %q: %q, want %q: %q", got.ErrorCode, got.ErrorMessage, wantCode, wantMessage)
			}
			ended := tc.ended
			if tc.outcome == "expired" {
				if got.Answered == 0 || got.Unanswered == 0 || got.Answered+got.Unanswered != members {
					t.Errorf("batches ls --json: expired batch 1 %d answered, %d not; want both of %d", got.Answered, got.Unanswered, members)
				}
				ended = fmt.Sprintf("expired (%d answered, %d not)", got.Answered, got.Unanswered)
			}
			code, table, errOut := sluice(t, r.env(), "batches", "ls", "--source", "wiki")
			if code != 0 || !strings.Contains(table, "batch 1 "+ended+"\n") {
				t.Errorf("batches ls exited %d, want batch 1 %s:\n%s%s", code, ended, table, errOut)
			}
			if cell := r.consoleOutcome(t, 1); cell != ended {
				t.Errorf("console Batches page: batch 1 ended %q, want %q", cell, ended)
			}
		})
	}
}
