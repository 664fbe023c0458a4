package bulk_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/dev/embedsim"
	"github.com/sluicehq/sluice/internal/store/bulk"
	"github.com/sluicehq/sluice/internal/store/bulk/view"
	"github.com/sluicehq/sluice/migrations"
)

// Each way a batch goes wrong converges with no operator action: the
// members of a batch that failed, expired or was lost are owed work again
// (here, a new batch), lines the batch did run are applied, and a slow
// finalization only takes longer.
func TestBatchFaultsConverge(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		faults embedsim.BatchFaults
		// lose makes the provider forget the first batch once created;
		// loseOutput, the first batch's output file once it completed,
		// before the poller reads it, as a provider restarted then does.
		lose, loseOutput bool
		// ended is how the first batch ends, cause the cause of its
		// owed members ("" when none are owed), outcome how the
		// operator's list names the end.
		ended, cause string
		outcome      view.Outcome
	}{
		{name: "failed", faults: embedsim.BatchFaults{FailRate: 1}, ended: "requeued", cause: "bulk batch failed: server_error", outcome: view.OutcomeFailed},
		{name: "expired", faults: embedsim.BatchFaults{ExpireRate: 1}, ended: "requeued", cause: "batch_expired", outcome: view.OutcomeExpired},
		{name: "lost at validating", faults: embedsim.BatchFaults{LoseRate: 1}, ended: "requeued", cause: "bulk batch lost", outcome: view.OutcomeLost},
		{name: "lost by the provider", lose: true, ended: "requeued", cause: "bulk batch lost", outcome: view.OutcomeLost},
		{name: "output file lost", loseOutput: true, ended: "requeued", cause: "bulk batch lost", outcome: view.OutcomeOutputLost},
		{name: "slow finalize", faults: embedsim.BatchFaults{SlowFinalize: 3 * time.Hour}, ended: "applied", outcome: view.OutcomeCompleted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			sim := embedsim.Config{}
			sim.Batch = phases()
			sim.Batch.Window = time.Hour // an expiring batch runs for 2 h
			sim.Batch.Faults = tc.faults
			tb := setup(t, sim, bulk.Config{})
			members := corpus("wiki", 30, plain)
			tb.admit(t, members)
			b, p := tb.builder(t, nil), tb.poller(t, nil)

			// Run until the first batch ends; the faults then stop.
			for i := 0; ; i++ {
				if i == 40 {
					t.Fatalf("first batch never ended: %v", tb.batchStates(t))
				}
				tb.round(t, b, p)
				if tc.lose {
					if id := tb.providerID(t, 1); id != "" {
						tb.sim.LoseBatch(id)
						tc.lose = false
					}
				}
				if tc.loseOutput {
					if id := tb.providerID(t, 1); id != "" {
						if pb, err := tb.client.Batch(tb.ctx, id); err == nil && pb.OutputFileID != "" {
							if err := tb.client.DeleteFile(tb.ctx, pb.OutputFileID); err != nil {
								t.Fatal(err)
							}
							tc.loseOutput = false
						}
					}
				}
				if st := tb.state(t, 1); st == "applied" || st == "requeued" {
					break
				}
			}
			if err := tb.sim.SetBatchFaults(embedsim.BatchFaults{}); err != nil {
				t.Fatal(err)
			}
			if st := tb.state(t, 1); st != tc.ended {
				t.Fatalf("first batch %s, want %s", st, tc.ended)
			}
			tb.converge(t, b, p)

			for k, v := range tb.outcomes(t, members) {
				if v != "stored" {
					t.Errorf("%s: %s, want stored", k, v)
				}
			}
			if twice := tb.handedTwice(t); len(twice) > 0 {
				t.Errorf("handed to the Applier twice: %v", twice)
			}
			causes := tb.counts(t, `SELECT cause, count(*) FROM test_handed WHERE kind = 'requeued' AND batch_id = 1 GROUP BY cause`)
			var owed int
			for cause, n := range causes {
				owed += n
				if tc.cause == "" || !strings.Contains(cause, tc.cause) {
					t.Errorf("owed for %q, want %q", cause, tc.cause)
				}
			}
			if tc.cause != "" && owed == 0 {
				t.Errorf("no member of the first batch was owed again")
			}
			if tc.name == "expired" && (owed == 0 || owed == len(members)) {
				t.Errorf("expired batch: %d of %d owed, want the half that did not run", owed, len(members))
			}
			tb.checkEnded(t, tc.outcome, len(members), owed)
		})
	}
}

// checkEnded checks what an operator reads of the first batch once it
// settled (view.List, which `sluice batches ls` and the console's Batches
// page show): its outcome, the provider's error when it failed, the
// members answered and not when it expired; and the metric of batches
// ended.
func (tb *testBundle) checkEnded(t *testing.T, outcome view.Outcome, members, owed int) {
	t.Helper()
	vs, err := view.List(tb.ctx, tb.db.RolePool(t, migrations.ConsoleRole), view.ListFilter{})
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(vs, func(v view.BatchView) bool { return v.ID == 1 })
	if i < 0 {
		t.Fatalf("batch 1 not listed: %+v", vs)
	}
	v := vs[i]
	if v.Outcome != outcome {
		t.Errorf("batch 1 outcome %q, want %q", v.Outcome, outcome)
	}
	switch outcome {
	case view.OutcomeFailed:
		if v.ErrorCode != "server_error" || v.ErrorMessage == "" || !strings.Contains(v.Ended(), "failed (server_error: ") {
			t.Errorf("failed batch: code %q, message %q, ended %q; want the provider's error", v.ErrorCode, v.ErrorMessage, v.Ended())
		}
	case view.OutcomeExpired:
		if v.Answered+v.Unanswered != members || v.Unanswered != owed || v.Answered == 0 {
			t.Errorf("expired batch: %d answered, %d not, want %d not of %d", v.Answered, v.Unanswered, owed, members)
		}
		if want := fmt.Sprintf("expired (%d answered, %d not)", v.Answered, v.Unanswered); v.Ended() != want {
			t.Errorf("expired batch ended %q, want %q", v.Ended(), want)
		}
	case view.OutcomeOutputLost:
		if v.Ended() != "lost output" {
			t.Errorf("batch whose output was lost ended %q, want lost output", v.Ended())
		}
	}
	if n := tb.endedMetric(t, "wiki", string(outcome)); n < 1 {
		t.Errorf("sluice_bulk_batches_ended_total{source=wiki,outcome=%s} = %v, want at least 1", outcome, n)
	}
}

// endedMetric reads sluice_bulk_batches_ended_total of source and
// outcome.
func (tb *testBundle) endedMetric(t *testing.T, source, outcome string) float64 {
	t.Helper()
	mfs, err := tb.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "sluice_bulk_batches_ended_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, lp := range m.GetLabel() {
				labels[lp.GetName()] = lp.GetValue()
			}
			if labels["source"] == source && labels["outcome"] == outcome {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}
