package bulk_test

import (
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/dev/embedsim"
	"github.com/sluicehq/sluice/internal/store/bulk"
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
		// owed members ("" when none are owed).
		ended, cause string
	}{
		{name: "failed", faults: embedsim.BatchFaults{FailRate: 1}, ended: "requeued", cause: "bulk batch failed: server_error"},
		{name: "expired", faults: embedsim.BatchFaults{ExpireRate: 1}, ended: "requeued", cause: "batch_expired"},
		{name: "lost at validating", faults: embedsim.BatchFaults{LoseRate: 1}, ended: "requeued", cause: "bulk batch lost"},
		{name: "lost by the provider", lose: true, ended: "requeued", cause: "bulk batch lost"},
		{name: "output file lost", loseOutput: true, ended: "requeued", cause: "bulk batch lost"},
		{name: "slow finalize", faults: embedsim.BatchFaults{SlowFinalize: 3 * time.Hour}, ended: "applied"},
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
		})
	}
}
