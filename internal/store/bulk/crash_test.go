package bulk_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/dev/embedsim"
	"github.com/sluicehq/sluice/internal/provider/batchapi"
	"github.com/sluicehq/sluice/internal/store/bulk"
)

// A builder or poller killed at any step, and a fresh one started on the
// same database, lose nothing: every chunk is stored or parked once, each
// ledger batch has exactly one provider batch, and the file half applied
// when the poller died is applied from where it stopped.
func TestCrashAtEachStepLosesNothing(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		point string
		// poller: the point is the poller's, not the builder's.
		poller bool
	}{
		{point: bulk.CrashBuilt},
		{point: bulk.CrashUploaded},
		{point: bulk.CrashCreateRequested},
		{point: bulk.CrashCreated},
		{point: bulk.CrashPolled, poller: true},
		{point: bulk.CrashSliceApplied, poller: true},
		{point: bulk.CrashApplied, poller: true},
	} {
		t.Run(tc.point, func(t *testing.T) {
			t.Parallel()
			sim := embedsim.Config{Faults: poisonFaults()}
			sim.Batch = phases()
			sim.Batch.OutputOrder = embedsim.OrderReverse
			tb := setup(t, sim, bulk.Config{Limits: batchapi.Limits{MaxRequests: 40}, SliceSize: 7})
			members := corpus("wiki", 60, poisoned)
			tb.admit(t, members)

			crash, hit := crashAt(tc.point)
			var b *bulk.Builder
			var p *bulk.Poller
			if tc.poller {
				b, p = tb.builder(t, nil), tb.poller(t, crash)
			} else {
				b, p = tb.builder(t, crash), tb.poller(t, nil)
			}
			// The doomed process runs until it dies.
			for i := 0; !*hit; i++ {
				if i == 40 {
					t.Fatalf("never reached %s", tc.point)
				}
				tb.clock.Advance(tb.cfg.MaxAge)
				berr, perr := b.Pass(tb.ctx), p.Pass(tb.ctx)
				for _, err := range []error{berr, perr} {
					if err != nil && !errors.Is(err, errCrash) {
						t.Fatal(err)
					}
				}
				tb.clock.Advance(4 * time.Minute)
			}
			if tc.point == bulk.CrashSliceApplied {
				var done int
				if err := tb.owner.QueryRow(tb.ctx, `SELECT max(output_lines_done) FROM bulk_batches`).Scan(&done); err != nil || done != 7 {
					t.Fatalf("died with %d lines applied (%v), want the first slice of 7", done, err)
				}
			}
			// A fresh pair resumes from the ledger.
			tb.converge(t, tb.builder(t, nil), tb.poller(t, nil))

			want := 0
			for k, v := range tb.outcomes(t, members) {
				if v == "missing" {
					t.Errorf("%s lost", k)
				}
				want++
			}
			if twice := tb.handedTwice(t); len(twice) > 0 {
				t.Errorf("handed to the Applier twice: %v", twice)
			}
			var handed int
			if err := tb.owner.QueryRow(tb.ctx, `SELECT count(*) FROM test_handed WHERE kind <> 'requeued'`).Scan(&handed); err != nil || handed != want {
				t.Errorf("%d results handed to the Applier (%v), want %d", handed, err, want)
			}
			if batches := tb.batchStates(t); batches["applied"] != 2 || len(batches) != 1 {
				t.Errorf("batches %v, want 2 applied", batches)
			}
			provider := tb.providerBatches(t)
			if len(provider) != 2 || provider["1"] != 1 || provider["2"] != 1 {
				t.Errorf("provider batches by ledger id %v, want one each for 1 and 2", provider)
			}
		})
	}
}

// A file applied twice changes nothing the second time: no result is
// handed to the Applier again and no stored row moves.
func TestApplyingAFileTwiceChangesNothing(t *testing.T) {
	t.Parallel()
	tb := setup(t, embedsim.Config{Faults: poisonFaults()}, bulk.Config{SliceSize: 10})
	members := corpus("wiki", 50, poisoned)
	tb.admit(t, members)
	// The poller stops once it has applied the files, before the batch
	// settles and its files go from the provider.
	crash, hit := crashAt(bulk.CrashApplied)
	b, p := tb.builder(t, nil), tb.poller(t, crash)
	for range 60 {
		tb.clock.Advance(tb.cfg.MaxAge)
		if err := b.Pass(tb.ctx); err != nil {
			t.Fatal(err)
		}
		if err := p.Pass(tb.ctx); *hit {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		tb.clock.Advance(4 * time.Minute)
	}
	if !*hit {
		t.Fatal("the poller never applied the batch's files")
	}
	before := tb.counts(t, `SELECT doc_id || ':' || chunk_index || ':' || changes || ':' || updated_at, 1 FROM test_vectors`)

	// The ledger forgets how far it got, as if its record were lost.
	if _, err := tb.owner.Exec(tb.ctx, `UPDATE bulk_batches SET output_lines_done = 0, error_lines_done = 0`); err != nil {
		t.Fatal(err)
	}
	if err := p.Pass(tb.ctx); err != nil {
		t.Fatal(err)
	}
	if st := tb.state(t, 1); st != "applied" {
		t.Errorf("batch %s after applying again, want applied", st)
	}
	after := tb.counts(t, `SELECT doc_id || ':' || chunk_index || ':' || changes || ':' || updated_at, 1 FROM test_vectors`)
	if len(after) != len(members) || len(before) != len(after) {
		t.Fatalf("%d rows before, %d after, want %d", len(before), len(after), len(members))
	}
	for k := range before {
		if _, ok := after[k]; !ok {
			t.Errorf("row %s changed", k)
		}
	}
	if twice := tb.handedTwice(t); len(twice) > 0 {
		t.Errorf("handed to the Applier twice: %v", twice)
	}
}

// An input file the provider lost before the batch was created (expired,
// deleted) is built and uploaded again, and the load converges with one
// provider batch.
func TestInputFileGoneIsUploadedAgain(t *testing.T) {
	t.Parallel()
	tb := setup(t, embedsim.Config{}, bulk.Config{})
	members := corpus("wiki", 20, plain)
	tb.admit(t, members)
	crash, hit := crashAt(bulk.CrashCreateRequested)
	tb.clock.Advance(tb.cfg.MaxAge)
	if err := tb.builder(t, crash).Pass(tb.ctx); !errors.Is(err, errCrash) || !*hit {
		t.Fatalf("builder = %v, want killed after recording the create request", err)
	}
	var file string
	if err := tb.owner.QueryRow(tb.ctx, `SELECT input_file_id FROM bulk_batches WHERE batch_id = 1`).Scan(&file); err != nil {
		t.Fatal(err)
	}
	if err := tb.client.DeleteFile(tb.ctx, file); err != nil {
		t.Fatal(err)
	}
	tb.converge(t, tb.builder(t, nil), tb.poller(t, nil))
	for k, v := range tb.outcomes(t, members) {
		if v != "stored" {
			t.Errorf("%s: %s, want stored", k, v)
		}
	}
	if n := tb.providerBatches(t); len(n) != 1 || n["1"] != 1 {
		t.Errorf("provider batches by ledger id %v, want one for 1", n)
	}
}

// Two builders and two pollers running at once move each batch once:
// nothing is sent or handed to the Applier twice.
func TestTwoProcessesMoveEachBatchOnce(t *testing.T) {
	t.Parallel()
	tb := setup(t, embedsim.Config{Faults: poisonFaults()}, bulk.Config{Limits: batchapi.Limits{MaxRequests: 15}, SliceSize: 4})
	members := corpus("wiki", 90, poisoned)
	tb.admit(t, members)
	b1, p1, b2, p2 := tb.builder(t, nil), tb.poller(t, nil), tb.builder(t, nil), tb.poller(t, nil)
	for i := 0; !tb.quiet(t); i++ {
		if i == 40 {
			t.Fatalf("not quiet: %v", tb.batchStates(t))
		}
		tb.clock.Advance(tb.cfg.MaxAge)
		errs := make(chan error, 4)
		for _, pass := range []func(context.Context) error{b1.Pass, b2.Pass, p1.Pass, p2.Pass} {
			go func() { errs <- pass(tb.ctx) }()
		}
		for range 4 {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
		}
		tb.clock.Advance(4 * time.Minute)
	}
	for k, v := range tb.outcomes(t, members) {
		if v == "missing" {
			t.Errorf("%s lost", k)
		}
	}
	if twice := tb.handedTwice(t); len(twice) > 0 {
		t.Errorf("handed to the Applier twice: %v", twice)
	}
	for id, n := range tb.providerBatches(t) {
		if n != 1 {
			t.Errorf("ledger batch %s has %d provider batches, want 1", id, n)
		}
	}
}
